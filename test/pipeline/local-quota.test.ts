// count_tokens' own per-organization quota (src/pipeline/local-quota.ts, issue 30 item 4).
import t from 'tap';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { LocalQuota } from '../../src/pipeline/local-quota.js';

function refusal(fn: () => void): GatewayError | null {
  try {
    fn();
    return null;
  } catch (err) {
    return err as GatewayError;
  }
}

t.test('issue 30 item 4: per organization, per second and per minute, with Retry-After', async (t) => {
  const q = new LocalQuota(3, 5);
  const t0 = 1_000_000_000_000;
  for (let i = 0; i < 3; i++) t.equal(refusal(() => q.admit('a', t0 + i)), null);
  const second = refusal(() => q.admit('a', t0 + 10));
  t.equal(second?.code, 'rate_limited');
  t.equal(second?.limit?.kind, 'count_tokens_quota');
  t.equal(second?.limit?.window, 'per_second');
  t.equal(second?.retryAfterSeconds, 1);
  t.equal(refusal(() => q.admit('b', t0 + 10)), null, 'another organization has its own');
  t.equal(refusal(() => q.admit('a', t0 + 1000)), null);
  t.equal(refusal(() => q.admit('a', t0 + 1001)), null);
  const minute = refusal(() => q.admit('a', t0 + 2000));
  t.equal(minute?.limit?.window, 'per_minute');
  t.equal(minute?.retryAfterSeconds, 58, 'until the first second leaves the window');
});

t.test('organizations idle for a whole window are forgotten', async (t) => {
  const q = new LocalQuota(10, 10);
  const t0 = 1_000_000_000_000;
  q.admit('a', t0);
  q.admit('b', t0 + 30_000);
  t.equal(q.size, 2);
  q.admit('c', t0 + 62_000);
  t.equal(q.size, 2, 'a, idle past the window, forgotten; b kept');
  q.admit('c', t0 + 100_000);
  t.equal(q.size, 2, 'swept at most once a minute');
  q.admit('c', t0 + 130_000);
  t.equal(q.size, 1, 'b forgotten at the next sweep');
});
