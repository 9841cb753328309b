// The workers' event-loop family in /metrics (issue 33 item 3;
// src/metrics/event-loop.ts): a task that holds the loop shows as the last
// window's maximum, the figures stay the same whoever scrapes in between, and
// the series renders with its help and type; the process's one monitor pauses
// while it is idle and runs again at its first work (issue 32). Only lower
// bounds on time are asserted: a loaded machine can only make the delay longer.
import t from 'tap';
import { EventLoopWindow, loopMonitor } from '../../src/metrics/event-loop.js';
import { Metrics, renderPrometheus } from '../../src/metrics/registry.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Holds the event loop for `ms`: one task, as a large reply decoded on the loop would. */
function hold(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

t.test('a 120 ms task is the last window\'s maximum, and scraping twice reads it twice', async (t) => {
  const window = new EventLoopWindow('worker', 400);
  t.teardown(() => window.stop());
  t.same(window.gauges(), {}, 'nothing before the first window has passed');
  await sleep(50);
  hold(120);
  // Past the window's end, before the next one's.
  await sleep(450);
  const first = window.gauges();
  const max = first[`event_loop_window_delay_seconds{role="worker",pid="${process.pid}",quantile="1"}`];
  t.ok(max !== undefined && max >= 0.1, `the longest task: ${max} s`);
  t.ok(first[`event_loop_window_delay_seconds{role="worker",pid="${process.pid}",quantile="0.99"}`]! > 0, 'a p99');
  t.same(window.gauges(), first, 'a second scrape reads the same window');
});

t.test('rendered in /metrics with its help and type, per worker', async (t) => {
  const window = new EventLoopWindow('worker', 100);
  t.teardown(() => window.stop());
  const metrics = new Metrics('worker');
  metrics.addGauges(() => window.gauges());
  await sleep(250);
  const text = renderPrometheus(metrics.snapshot());
  t.match(text, /# TYPE tollgate_event_loop_window_delay_seconds summary/);
  t.match(text, /# HELP tollgate_event_loop_window_delay_seconds .+/);
  t.match(text, new RegExp(`tollgate_event_loop_window_delay_seconds\\{role="worker",pid="${process.pid}",quantile="1"\\} [0-9.e-]+`));
});

t.test('the monitor pauses while the process is idle, and measures again from its first work', async (t) => {
  const metrics = new Metrics('worker');
  const window = new EventLoopWindow('worker', 60_000);
  let inFlight = 0;
  t.teardown(() => {
    window.stop();
    loopMonitor.stopPausing();
  });
  const delay = (q: string): number | undefined => metrics.snapshot().gauges[`event_loop_delay_seconds{role="worker",pid="${process.pid}",quantile="${q}"}`];
  t.ok(loopMonitor.running, 'running while read, before anyone says how to tell idleness');
  delay('1'); // empties the scrape's figures
  await sleep(30);
  hold(60);
  loopMonitor.pauseWhenIdle(() => inFlight === 0);
  await sleep(2300); // a check finds no work announced, nothing in flight, the loop quiet
  t.notOk(loopMonitor.running, 'paused: no timer wakes the idle process');
  const before = delay('1');
  t.ok(before !== undefined && before >= 0.06, `a 60 ms task before the pause is kept across it: ${before} s`);
  await sleep(50);
  t.equal(delay('1'), 0.01, 'while paused the loop reads as on time (the timer\'s 10 ms, no delay)');
  t.equal(delay('1'), 0.01, 'and again at the next scrape');

  // Work announced (a request): the timer runs at once, and a task right after it is measured.
  loopMonitor.work();
  t.ok(loopMonitor.running, 'running again at the first work');
  hold(80);
  await sleep(30);
  const max = delay('1');
  t.ok(max !== undefined && max >= 0.08, `the 80 ms task after the pause is seen: ${max} s`);

  // A request in flight keeps it running, announced or not.
  inFlight = 1;
  await sleep(2300);
  t.ok(loopMonitor.running, 'a request in flight: still running');
  inFlight = 0;
  await sleep(2300);
  t.notOk(loopMonitor.running, 'paused once it ended');

  // Work nobody announced (the loop busy for 80 ms of a second) resumes it at the next check.
  hold(80);
  await sleep(1200);
  t.ok(loopMonitor.running, 'running again: the loop was busy though nobody said so');
});
