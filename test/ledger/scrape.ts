// One /metrics scrape (of a gateway's operator listener, Gateway.opsUrl), read the way a test asks of it.

/** Series → value, and a sum over every series of a name. */
export async function scrape(opsUrl: string): Promise<{ text: string; sum(name: string, labels?: string): number; has(name: string): boolean }> {
  const text = await (await fetch(`${opsUrl}/metrics`)).text();
  const series = text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).map((l) => [l.slice(0, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))] as const);
  const matching = (name: string, labels = ''): Array<readonly [string, number]> => series.filter(([s]) => (s === name || s.startsWith(name + '{')) && s.includes(labels));
  return { text, sum: (name, labels) => matching(name, labels).reduce((a, [, v]) => a + v, 0), has: (name) => matching(name).length > 0 };
}
