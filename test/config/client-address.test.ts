// Issue 30 item 6: the client address behind a proxy (config/client-address.ts).
import t from 'tap';
import { canonicalIp, clientAddressRule, limitKey, proxySet } from '../../src/config/client-address.js';
import { loadConfig, ConfigError } from '../../src/config/load.js';

t.test('issue 30 item 6: X-Forwarded-For is read only from listed proxies, rightmost untrusted first', async (t) => {
  const none = clientAddressRule([]);
  t.equal(none('127.0.0.1', '203.0.113.9'), '127.0.0.1', 'no proxies listed: the header is ignored');
  const rule = clientAddressRule(['10.0.0.0/8', '127.0.0.1', '2001:db8::/32']);
  t.equal(rule('192.0.2.1', '203.0.113.9'), '192.0.2.1', 'a peer that is not listed: the header is ignored');
  t.equal(rule('127.0.0.1', ''), '127.0.0.1', 'a listed proxy without the header: the proxy');
  t.equal(rule('127.0.0.1', '203.0.113.9'), '203.0.113.9');
  t.equal(rule('127.0.0.1', '198.51.100.1, 203.0.113.9'), '203.0.113.9', 'what the client wrote before the proxy appended is not believed');
  t.equal(rule('127.0.0.1', '198.51.100.1, 203.0.113.9, 10.1.2.3'), '203.0.113.9', 'listed proxies in the chain are skipped');
  t.equal(rule('127.0.0.1', 'garbage, 10.1.2.3'), '10.1.2.3', 'a hop that is no address stops the walk at the last proxy');
  t.equal(rule('127.0.0.1', '10.1.2.3, 10.0.0.1'), '10.1.2.3', 'all proxies: the farthest');
  t.equal(rule('0000:0000:0000:0000:0000:ffff:7f00:0001', '2001:DB8::1, 203.0.113.7'), '203.0.113.7', 'an IPv4-mapped peer is its IPv4 address');
  t.equal(rule('2001:db8:0:0:0:0:0:5', '2001:0DB8:0:0:0:0:0:1, 2001:db9::1'), '2001:db9::1', 'IPv6 canonical');
});

t.test('addresses are canonical', async (t) => {
  t.equal(canonicalIp('::ffff:1.2.3.4'), '1.2.3.4');
  t.equal(canonicalIp('2001:0DB8:0000::0001'), '2001:db8::1');
  t.equal(canonicalIp('fe80::1%eth0'), null);
  t.equal(canonicalIp('1.2.3'), null);
  t.equal(canonicalIp(''), null);
});

t.test('issue 30 item 6: an IPv6 client is limited per /64, an IPv4 client per address', async (t) => {
  t.equal(limitKey('203.0.113.9'), '203.0.113.9');
  t.equal(limitKey('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64');
  t.equal(limitKey('2001:db8::1'), '2001:db8:0:0::/64');
  t.equal(limitKey('2001:db8:1:2::9'), limitKey('2001:db8:1:2:ffff::1'), 'one /64, one key');
  t.equal(limitKey('::1'), '0:0:0:0::/64');
  t.equal(limitKey('fe80::'), 'fe80:0:0:0::/64');
});

t.test('http.trusted_proxies is checked at start, from the file or TRUSTED_PROXIES', async (t) => {
  t.throws(() => proxySet(['10.0.0.0/33']), /"10.0.0.0\/33" is not an IP address or CIDR block/);
  t.throws(() => proxySet(['proxy.internal']), /not an IP address/);
  t.throws(() => loadConfig({ TRUSTED_PROXIES: '127.0.0.1, nope' }), new ConfigError('config: http.trusted_proxies "nope" is not an IP address or CIDR block (from TRUSTED_PROXIES)'));
  t.same(loadConfig({ TRUSTED_PROXIES: '127.0.0.1, 10.0.0.0/8' }).http.trusted_proxies, ['127.0.0.1', '10.0.0.0/8']);
  t.same(loadConfig({}).http.trusted_proxies, [], 'off by default');
});
