/**
 * Finding and reading jobs for the moves of queue control (remove, retry,
 * promote, drain, clean): a job's one pointer, found from what its record
 * says; records read one by one or together; the active ids. A record is
 * read BEFORE the claims are listed, so a claim taken after the read has
 * moved the record's version on and the write at the version read fails.
 */
import { NoNodeError } from '../../zk/errors.js';
import { laneOf } from '../layout.js';
import { decodeRecord, type JobRecord } from '../record.js';
import { CLAIM_READ_BATCH } from './claim.js';
import type { ProtocolContext, StoredJob } from './context.js';
import { delayedPointers, type Located, pointersIn } from './walks.js';

/** Jobs read at once by bulk operations, and pointers listed at once while looking for one. */
export const READ_CHUNK = 100;
/** Pointers listed at once while looking for many jobs' (findPointers). */
const FIND_CHUNK = 1000;

/** A job found through its pointer, with its record when readable (undefined: gone or malformed). */
export interface Read extends Located {
  stored: StoredJob | undefined;
  /** Record version when the node exists (malformed records included). */
  version: number | undefined;
}

export function laneOfRecord(r: JobRecord): string {
  return r.lane ?? laneOf(r.priority ?? 0, r.opts?.lifo === true);
}

/**
 * A job's record as stored, with its claim node's data when there (a claim
 * writes no record: `getJob` reads a waiting job with it as active), in one
 * read-only multi; undefined when there is no such job. A record that is
 * not one, or a read that failed otherwise (the claim's, of a waiting
 * job), rejects.
 */
export async function readStored(
  store: ProtocolContext,
  id: string,
): Promise<{ stored: StoredJob; claim: Buffer | undefined } | undefined> {
  const path = store.layout.job(id);
  const [record, claim] = await store.session.readMulti([
    { op: 'getData', path },
    { op: 'getData', path: store.layout.claim(id) },
  ] as const);
  if (!record.ok) {
    if (record.error instanceof NoNodeError) return undefined;
    throw record.error;
  }
  const stored = { record: decodeRecord(record.data, path), version: record.stat.version };
  // the claim matters to a waiting job only (a claim writes no record)
  if (!claim.ok && !(claim.error instanceof NoNodeError) && stored.record.state === 'waiting') throw claim.error;
  return { stored, claim: claim.ok ? claim.data : undefined };
}

/** The path of the job's one pointer, found from what its record says, or undefined. */
export async function findPointer(store: ProtocolContext, r: JobRecord): Promise<string | undefined> {
  const { layout } = store;
  const search = async (container: string, order: 'sequence' | 'due') => {
    for await (const chunk of pointersIn(store, container, READ_CHUNK, order)) {
      const hit = chunk.find((p) => p.id === r.id);
      if (hit) return hit.pointer;
    }
    return undefined;
  };
  switch (r.state) {
    case 'waiting':
    case 'active':
      return search(layout.lane(laneOfRecord(r)), 'sequence');
    case 'delayed': {
      if (r.due !== undefined) {
        const hit = await search(layout.delayHour(r.due), 'due');
        if (hit) return hit;
      }
      for await (const chunk of delayedPointers(store, READ_CHUNK)) {
        const hit = chunk.find((p) => p.id === r.id);
        if (hit) return hit.pointer;
      }
      return undefined;
    }
    case 'waiting-children':
      return r.parked;
    default:
      return search(layout.finishedDir(r.state), 'sequence');
  }
}

/**
 * The pointers of jobs, found from what their records say, each container
 * listed once. A job whose pointer is not where its record says is missing
 * from the map (findPointer searches further).
 */
export async function findPointers(
  store: ProtocolContext,
  records: readonly JobRecord[],
): Promise<Map<string, string>> {
  const { layout } = store;
  const found = new Map<string, string>();
  const wanted = new Map<string, { order: 'sequence' | 'due'; ids: Set<string> }>();
  const want = (container: string, order: 'sequence' | 'due', id: string) => {
    const entry = wanted.get(container) ?? { order, ids: new Set<string>() };
    entry.ids.add(id);
    wanted.set(container, entry);
  };
  for (const r of records) {
    if (r.state === 'waiting' || r.state === 'active') want(layout.lane(laneOfRecord(r)), 'sequence', r.id);
    else if (r.state === 'delayed') {
      if (r.due !== undefined) want(layout.delayHour(r.due), 'due', r.id);
    } else if (r.state === 'waiting-children') {
      if (r.parked) found.set(r.id, r.parked);
    } else want(layout.finishedDir(r.state), 'sequence', r.id);
  }
  for (const [container, { order, ids }] of wanted) {
    for await (const chunk of pointersIn(store, container, FIND_CHUNK, order)) {
      for (const p of chunk) if (ids.has(p.id)) found.set(p.id, p.pointer);
    }
  }
  return found;
}

/** Reads the records of `located` jobs; a gone record leaves both `stored` and `version` undefined. */
export async function readJobs(store: ProtocolContext, located: Located[]): Promise<Read[]> {
  return Promise.all(
    located.map(async (l): Promise<Read> => {
      const path = store.layout.job(l.id);
      try {
        const { data, stat } = await store.session.getData(path);
        try {
          return { ...l, stored: { record: decodeRecord(data, path), version: stat.version }, version: stat.version };
        } catch {
          return { ...l, stored: undefined, version: stat.version }; // malformed
        }
      } catch (err) {
        if (err instanceof NoNodeError) return { ...l, stored: undefined, version: undefined };
        throw err;
      }
    }),
  );
}

/** The records of jobs `ids`, CLAIM_READ_BATCH per read-only multi (their pointers not known: ''). */
export async function readJobsTogether(store: ProtocolContext, ids: readonly string[]): Promise<Read[]> {
  const out: Read[] = [];
  for (let i = 0; i < ids.length; i += CLAIM_READ_BATCH) {
    const batch = ids.slice(i, i + CLAIM_READ_BATCH);
    const replies = await store.session.readMulti(
      batch.map((id) => ({ op: 'getData' as const, path: store.layout.job(id) })),
    );
    batch.forEach((id, j) => {
      const reply = replies[j];
      const path = store.layout.job(id);
      if (!reply?.ok) {
        if (reply?.error instanceof NoNodeError) out.push({ id, pointer: '', stored: undefined, version: undefined });
        else throw reply?.error ?? new NoNodeError(path);
        return;
      }
      let stored: StoredJob | undefined;
      try {
        stored = { record: decodeRecord(reply.data, path), version: reply.stat.version };
      } catch {
        stored = undefined; // malformed
      }
      out.push({ id, pointer: '', stored, version: reply.stat.version });
    });
  }
  return out;
}

/** Ids of the active jobs. List it AFTER reading the records it filters (see the header). */
export async function activeIds(store: ProtocolContext): Promise<Set<string>> {
  return new Set(await store.children(store.layout.claimsDir));
}

/** `n` as a positive whole count, or `fallback`. */
export function positive(n: number | undefined, fallback: number): number {
  return n !== undefined && Number.isFinite(n) && n > 0 ? Math.floor(n) : fallback;
}
