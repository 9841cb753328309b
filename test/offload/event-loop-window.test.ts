// The workers' event-loop family in /metrics (issue 33 item 3;
// src/metrics/event-loop.ts): a task that holds the loop shows as the last
// window's maximum, the figures stay the same whoever scrapes in between, and
// the series renders with its help and type. Only lower bounds on time are
// asserted: a loaded machine can only make the delay longer.
import t from 'tap';
import { EventLoopWindow } from '../../src/metrics/event-loop.js';
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
