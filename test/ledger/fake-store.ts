// An in-memory LedgerStore with the same semantics as the SQL one (entries
// unique by id, balances moved only by inserted entries, writer tags
// recognised on retry), plus switches to make writes fail or wait.
import type { UsageRow } from '../../src/ledger/protocol.js';
import { chargeEntry, type AccountRow, type Entry } from '../../src/ledger/records.js';
import type { LedgerStore, SettledRow, StoredCredit } from '../../src/ledger/store.js';
import { readUsageLine } from '../../src/ledger/usage-line.js';

interface StoredEntry extends Entry {
  writer: string | null;
}

export class FakeStore implements LedgerStore {
  readonly orgs = new Map<string, AccountRow>();
  readonly entries = new Map<string, StoredEntry>();
  readonly usage = new Map<string, UsageRow>();
  writes = 0;
  /** The next write fails: before applying ('connection'), after applying ('lost-answer'), or as bad data. */
  failNext: 'connection' | 'lost-answer' | 'data' | null = null;
  /** Rows whose request id is here are refused as bad data, alone or in a batch. */
  readonly poison = new Set<string>();
  /** While set, writes wait for it. */
  gate: Promise<void> | null = null;

  addOrg(id: string, balance: number, extra: Partial<AccountRow> = {}): void {
    this.orgs.set(id, { balance, package: 0, packageExpiresAt: null, quotaPerSecond: null, quotaPerMinute: null, ...extra });
  }

  async loadAccount(orgId: string): Promise<AccountRow | null> {
    return (await this.loadAccounts([orgId])).get(orgId) ?? null;
  }

  async loadAccounts(orgIds: string[], entryIds: string[] = []): Promise<Map<string, AccountRow>> {
    const out = new Map<string, AccountRow>();
    for (const id of orgIds) {
      const row = this.orgs.get(id);
      if (row === undefined) continue;
      // As organization_money (migration 008): the row plus the writers' parts, with each part's seq.
      const parts = [...(this.parts.get(id) ?? new Map()).entries()];
      out.set(id, {
        ...row,
        balance: row.balance + parts.reduce((n, [, p]) => n + p.balance, 0),
        package: row.package + parts.reduce((n, [, p]) => n + p.package, 0),
        writerSeqs: new Map(parts.map(([w, p]) => [w, p.seq])),
        journaled: new Set(entryIds.filter((e) => this.entries.get(e)?.orgId === id)),
      });
    }
    return out;
  }

  /** Workers' parts of the balances, by organization and writer (PgLedgerStore.writeWriterBatch). */
  readonly parts = new Map<string, Map<string, { balance: number; package: number; seq: number }>>();

  async writeWriterBatch(rows: readonly SettledRow[], writer: string, seq: number): Promise<void> {
    this.writes++;
    if (rows.some((r) => this.poison.has(r.usage.requestId))) throw Object.assign(new Error('bad data'), { code: '22003' });
    for (const { usage: u, writer: tag } of rows) {
      if (!this.usage.has(u.requestId)) this.usage.set(u.requestId, { ...u });
      let byWriter = this.parts.get(u.orgId);
      if (byWriter === undefined) this.parts.set(u.orgId, (byWriter = new Map()));
      const part = byWriter.get(writer) ?? { balance: 0, package: 0, seq };
      part.seq = Math.max(part.seq, seq);
      byWriter.set(writer, part);
      const e = chargeEntry(u);
      if (tag === null || this.entries.has(e.id)) continue;
      this.entries.set(e.id, { ...e, writer: tag });
      if (e.funding === 'balance') part.balance += e.amount;
      else part.package += e.amount;
    }
  }

  /** Batches taken by copyWriterLines. */
  copies = 0;

  /** As PgLedgerStore: all or nothing (false: a row is stored already). `moved` must be what the lines' charges move: checked here. */
  async copyWriterLines(lines: Buffer, moved: ReadonlyMap<string, readonly [bigint, bigint]>, writer: string, seq: number): Promise<boolean> {
    const rows: SettledRow[] = [];
    const sums = new Map<string, [bigint, bigint]>();
    for (const line of lines.toString('utf8').split('\n')) {
      if (line === '') continue;
      const row = readUsageLine(line);
      if (row === null) throw Object.assign(new Error(`not a usage line: ${line}`), { code: '22P04' });
      rows.push(row);
      const s = sums.get(row.usage.orgId) ?? [0n, 0n];
      if (row.writer !== null) s[row.usage.funding === 'package' ? 1 : 0] -= BigInt(row.usage.chargedMicros);
      sums.set(row.usage.orgId, s);
    }
    const given = [...moved].map(([o, [b, p]]) => `${o}:${b}:${p}`).sort();
    const made = [...sums].map(([o, [b, p]]) => `${o}:${b}:${p}`).sort();
    if (given.join() !== made.join()) throw new Error(`moved ${given.join()} is not what the lines charge: ${made.join()}`);
    const fail = this.failNext;
    this.failNext = null;
    if (fail === 'connection') throw new Error('connection terminated');
    if (rows.some((r) => this.usage.has(r.usage.requestId))) return false;
    await this.writeWriterBatch(rows, writer, seq);
    this.copies++;
    if (fail === 'lost-answer') throw new Error('connection lost after commit');
    return true;
  }

  async foldWriter(writer: string): Promise<string[]> {
    const folded: string[] = [];
    for (const [orgId, byWriter] of this.parts) {
      const part = byWriter.get(writer);
      if (part === undefined) continue;
      const org = this.orgs.get(orgId)!;
      org.balance += part.balance;
      org.package += part.package;
      byWriter.delete(writer);
      folded.push(orgId);
    }
    return folded;
  }

  /** As PgLedgerStore: a first attempt does not look for an earlier one (`lookForEarlier` false). */
  private insert(entries: Entry[], tags: Array<string | null>, lookForEarlier = true): Set<string> {
    const stored = new Set<string>();
    entries.forEach((e, i) => {
      const prior = this.entries.get(e.id);
      if (prior !== undefined) {
        if (lookForEarlier && tags[i] !== null && prior.writer === tags[i]) stored.add(e.id);
        return;
      }
      this.entries.set(e.id, { ...e, writer: tags[i] });
      const org = this.orgs.get(e.orgId)!;
      if (e.funding === 'balance') org.balance += e.amount;
      else org.package += e.amount;
      if (e.kind === 'credit' && e.expiresAt !== null) org.packageExpiresAt = Date.parse(e.expiresAt);
      stored.add(e.id);
    });
    return stored;
  }

  async writeBatch(rows: readonly SettledRow[], firstAttempt = false): Promise<Set<string>> {
    this.writes++;
    if (this.gate !== null) await this.gate;
    const fail = this.failNext;
    this.failNext = null;
    if (fail === 'connection') throw new Error('connection terminated');
    if (fail === 'data' || rows.some((r) => this.poison.has(r.usage.requestId))) throw Object.assign(new Error('bad data'), { code: '22003' });
    for (const { usage: u } of rows) if (!this.usage.has(u.requestId)) this.usage.set(u.requestId, { ...u });
    // As the statement: the charge entry is derived from the row (chargeEntry), tagged with its writer.
    const charged = rows.filter((r) => r.writer !== null);
    const stored = this.insert(charged.map((r) => chargeEntry(r.usage)), charged.map((r) => r.writer), !firstAttempt);
    if (fail === 'lost-answer') throw new Error('connection lost after commit');
    return stored;
  }

  async writeCredit(entries: Entry[]): Promise<StoredCredit | null> {
    const credit = entries[entries.length - 1];
    const prior = this.entries.get(credit.id);
    if (prior !== undefined) return { amount: prior.amount, funding: prior.funding };
    this.insert(entries, entries.map(() => null));
    return null;
  }

  /** Sum of the journal for one organization and funding source. */
  journalSum(orgId: string, funding: 'balance' | 'package' = 'balance'): number {
    let sum = 0;
    for (const e of this.entries.values()) if (e.orgId === orgId && e.funding === funding) sum += e.amount;
    return sum;
  }
}
