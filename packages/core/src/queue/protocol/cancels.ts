/**
 * Cancel requests: cancelling a job reaches the process that runs it,
 * whichever machine that is.
 *
 * A request is a node `cancels/w-<worker>/<jobId>-<token>`
 * {"reason"?,"at","pointer"} filed under the worker named in the job's
 * claim, one per attempt (the attempt's fencing token is in its name, its
 * ready pointer in its data). Only that worker watches that directory (one
 * children watch, armed while it holds jobs: see runtime/cancel-watch.ts),
 * so a cancel wakes the one process that can act on it, however many
 * workers the queue has. A directory holds the requests of the worker's
 * running attempts, and those of ended ones until the next sweep.
 *
 * - `requestCancel` reads the claim (its worker and pointer), the
 *   pointer's version (the token: nothing else writes it while the claim is
 *   there) and the claim again (the same one: a job given back in place and
 *   claimed by another worker in between keeps its pointer), and creates the request in a transaction that also checks that
 *   the claim exists and the pointer is at that token: a request only ever
 *   names a running attempt. A job that is not running (waiting, delayed,
 *   finished, missing) is refused with `false`, and nothing is written.
 * - The worker aborts the attempt whose token the request names (the
 *   processor's AbortSignal fires with the reason) and deletes the request.
 *   What becomes of the job is the processor's answer: it fails, or
 *   retries, with the error it throws; a processor that ignores its signal
 *   is not killed and finishes as it would have.
 * - A request outlives its attempt when the job finished (or its worker
 *   died) before the worker acted. It then names a pointer that is gone, or
 *   at a later version than its token (versions never go back), and the
 *   leader deletes it (`sweepCancels`), then the worker directories left
 *   empty. A later attempt of the same job never acts on it (another token,
 *   another name), and a request for that attempt is a node of its own.
 * - A job of the same id added again (a custom id, after a removal) has a
 *   new pointer whose versions count from 0 again, so its tokens repeat
 *   those of the job before it. A request is therefore current only when
 *   its pointer is there at its token and it was last written after that
 *   pointer was created (its mzxid past the pointer's czxid): an older one
 *   with the same name is left from the earlier job. It never cancels the
 *   new one; the worker and the leader delete it, and a request for the new
 *   attempt rewrites it.
 *
 * Suspension loses nothing: requests are persistent, and the worker's watch
 * loop lists its directory again on reconnecting. After a session loss the
 * worker re-claims its jobs at the same token (or loses them), and reads
 * its directory again: a request for a job it still runs is acted on.
 */
import { InvalidArgumentError } from '../../errors.js';
import { BadVersionError, NodeExistsError, NoNodeError } from '../../zk/errors.js';
import type { Watcher } from '../../zk/types.js';
import { parseCancelName, type QueueLayout } from '../layout.js';
import type { ClaimInfo, ProtocolContext } from './context.js';
import type { ProtocolOp, TxUnit } from './executor.js';
import { isWriteConflict } from './replan.js';

/** Longest cancel reason, in bytes (UTF-8): a reason is a message, not a payload. */
export const MAX_CANCEL_REASON_BYTES = 4096;
/** Requests read (or jobs looked at) per round trip. */
const READ_BATCH = 100;

/** What a request node holds. */
export interface CancelRequestData {
  reason?: string;
  /** When it was asked, on the asker's clock (for people; never compared). */
  at: number;
  /** The attempt's ready pointer (its version is the token the request's name carries). */
  pointer?: string;
}

/** A request as its worker reads it. */
export interface CancelRequest extends CancelRequestData {
  id: string;
  /** The attempt it cancels: its fencing token. */
  token: number;
}

/** Throws InvalidArgumentError unless `reason` is undefined or a string of at most MAX_CANCEL_REASON_BYTES. */
export function validateCancelReason(reason: unknown): asserts reason is string | undefined {
  if (reason === undefined) return;
  if (typeof reason !== 'string') throw new InvalidArgumentError('reason must be a string', 'reason');
  if (Buffer.byteLength(reason) > MAX_CANCEL_REASON_BYTES) {
    throw new InvalidArgumentError(`reason is over ${MAX_CANCEL_REASON_BYTES} bytes`, 'reason');
  }
}

/**
 * The ops of a request: the attempt's pointer still at its token, the claim
 * still there, then the request created (role `into`: its worker directory
 * is made on first use and removed by the leader when empty), or, over a
 * request an earlier job of the same id left (`stale`: its version read),
 * rewritten. The order is pinned: `requestCancel` reads a failure of the
 * last op as "asked before".
 */
export function cancelRequestOps(
  layout: QueueLayout,
  r: { id: string; worker: string; pointer: string; token: number; data: Buffer; stale?: number | undefined },
): ProtocolOp[] {
  const path = layout.cancel(r.worker, r.id, r.token);
  return [
    { op: 'check', path: r.pointer, version: r.token },
    { op: 'check', path: layout.claim(r.id), version: -1 },
    r.stale === undefined
      ? { op: 'create', path, data: r.data, role: 'into' }
      : { op: 'setData', path, data: r.data, version: r.stale },
  ];
}

/** A request is current when its pointer is at its token and it was last written after the pointer was made (see the header). */
function isCurrent(
  request: { mzxid: number },
  token: number | undefined,
  pointer: { czxid: number; version: number } | null | undefined,
): boolean {
  return pointer !== null && pointer !== undefined && pointer.version === token && request.mzxid > pointer.czxid;
}

/** The pointer a request's data names, if any (requests of older versions name none: never current). */
function pointerOf(data: Buffer): string | undefined {
  return parseRequest(data).pointer;
}

/**
 * Asks the worker running job `id` to cancel it. Resolves true once a
 * request for the running attempt is stored (made now, or asked before),
 * false when the job is not running: nothing is written then.
 */
export async function requestCancel(store: ProtocolContext, id: string, reason?: string): Promise<boolean> {
  validateCancelReason(reason);
  const { layout } = store;
  let stale: { path: string; version: number } | undefined;
  let path = '';
  let token: number | undefined;
  let pointer = '';
  return store.executor.runPlanned(
    async () => {
      const read = await currentAttempt(store, id);
      if (!read) return { answer: false };
      const { claim, stat } = read;
      pointer = claim.pointer;
      token = stat.version;
      path = layout.cancel(claim.worker, id, token);
      const body: CancelRequestData = { at: Date.now(), pointer, ...(reason === undefined ? {} : { reason }) };
      const request = {
        id,
        worker: claim.worker,
        pointer,
        token,
        data: Buffer.from(JSON.stringify(body)),
        stale: stale?.path === path ? stale.version : undefined,
      };
      stale = undefined;
      const unit: TxUnit = {
        build: async () => {
          await store.ensureDir(layout.cancelsOf(claim.worker));
          return { ops: cancelRequestOps(layout, request) };
        },
      };
      return { answer: true, unit };
    },
    {
      onFailure: async (error, op) => {
        if (error instanceof NodeExistsError && op?.path === path) {
          const [left, at] = await Promise.all([store.session.exists(path), store.session.exists(pointer)]);
          if (left && isCurrent(left, token, at)) return { answer: true }; // asked before, for this attempt
          // left by an earlier job of this id: rewritten next (gone meanwhile: made again)
          if (left && at) stale = { path, version: left.version };
          return 'again';
        }
        // the attempt ended (or another began) between the read and the write: look again
        return isWriteConflict(error) ? 'again' : 'fail';
      },
    },
  );
}

/** Claims read again at most, each seen replaced by another while its pointer was read. */
const ATTEMPT_READS = 32;

/**
 * The claim of the attempt running `id` and its pointer's stat (its version
 * the attempt's token), or undefined when none runs. The claim is read again
 * after the pointer: the same claim there still (its worker and start), the
 * pointer was at its attempt's token. A job given back in place keeps its
 * pointer, and the next claim, maybe another worker's, moves it on.
 */
async function currentAttempt(
  store: ProtocolContext,
  id: string,
): Promise<{ claim: ClaimInfo & { pointer: string }; stat: { version: number } } | undefined> {
  let claim = await store.getClaim(id);
  for (let i = 0; i < ATTEMPT_READS; i++) {
    const pointer = claim?.pointer;
    if (!claim || pointer === undefined) return undefined;
    const stat = await store.session.exists(pointer);
    if (!stat) return undefined;
    const again = await store.getClaim(id);
    if (again?.worker === claim.worker && again.at === claim.at && again.pointer === pointer) {
      return { claim: { ...claim, pointer }, stat };
    }
    claim = again;
  }
  return undefined;
}

function parseRequest(data: Buffer): CancelRequestData {
  try {
    const v = JSON.parse(data.toString()) as Partial<CancelRequestData>;
    return {
      at: typeof v.at === 'number' ? v.at : 0,
      ...(typeof v.reason === 'string' ? { reason: v.reason } : {}),
      ...(typeof v.pointer === 'string' ? { pointer: v.pointer } : {}),
    };
  } catch {
    return { at: 0 };
  }
}

// ---- the worker's side --------------------------------------------------------

/**
 * The attempts `worker`'s requests name, arming `watch`: a children watch
 * on its directory or, while the directory does not exist, an exists-watch
 * that fires when the first request makes it.
 */
export async function listCancelRequests(
  store: ProtocolContext,
  worker: string,
  watch?: Watcher,
): Promise<{ id: string; token: number }[]> {
  const dir = store.layout.cancelsOf(worker);
  for (;;) {
    try {
      const names = await store.session.getChildren(dir, watch ? { watch } : {});
      return names.flatMap((n) => parseCancelName(n) ?? []);
    } catch (err) {
      if (!(err instanceof NoNodeError)) throw err;
    }
    if (!watch) return [];
    // made between the two reads: list it (the exists-watch set meanwhile fires at most once)
    if (!(await store.session.exists(dir, { watch }))) return [];
  }
}

/** A request's node as read: its attempt and data version. */
export interface ReadRequest {
  id: string;
  token: number;
  version: number;
}

/**
 * The requests of `worker` for these attempts, with their reasons; gone
 * ones are left out, and those left by an earlier job of the same id (see
 * the header) are returned apart, as `stale`.
 */
export async function readCancelRequests(
  store: ProtocolContext,
  worker: string,
  attempts: readonly { id: string; token: number }[],
): Promise<{ requests: CancelRequest[]; stale: ReadRequest[] }> {
  const requests: CancelRequest[] = [];
  const stale: ReadRequest[] = [];
  for (let i = 0; i < attempts.length; i += READ_BATCH) {
    const batch = attempts.slice(i, i + READ_BATCH);
    const replies = await store.session.readMulti(
      batch.map((a) => ({ op: 'getData' as const, path: store.layout.cancel(worker, a.id, a.token) })),
    );
    const pointers = await Promise.all(
      batch.map((_, j) => {
        const reply = replies[j];
        const pointer = reply?.ok ? pointerOf(reply.data) : undefined;
        return pointer ? store.session.exists(pointer) : null;
      }),
    );
    batch.forEach((a, j) => {
      const reply = replies[j];
      if (!reply?.ok) return;
      if (isCurrent(reply.stat, a.token, pointers[j])) {
        const { pointer: _, ...request } = parseRequest(reply.data);
        requests.push({ id: a.id, token: a.token, ...request });
      } else stale.push({ ...a, version: reply.stat.version });
    });
  }
  return { requests, stale };
}

/**
 * Deletes requests acted on (one already gone is fine), or stale ones at the
 * version read (one rewritten since for a new attempt stays). Resolves true
 * when a stale one stayed so: it names an attempt again, and a rewrite
 * fires no children watch, so the worker reads it again.
 */
export async function dropCancelRequests(
  store: ProtocolContext,
  worker: string,
  attempts: readonly { id: string; token: number; version?: number }[],
): Promise<boolean> {
  if (attempts.length === 0) return false;
  const units = attempts.map((a) => ({
    build: () => ({
      ops: [{ op: 'delete' as const, path: store.layout.cancel(worker, a.id, a.token), version: a.version ?? -1 }],
    }),
  }));
  // read back by its receipt: a request of the same name made since (a job added again, its attempt at the
  // same token on this worker) is back at version 0, and a delete sent again after a lost reply would take it
  const results = await store.executor.run(units);
  return results.some((r, i) => !r.ok && attempts[i]?.version !== undefined && r.error instanceof BadVersionError);
}

// ---- the leader's side ----------------------------------------------------------

/**
 * Deletes the requests whose attempt is over (the pointer they name gone,
 * or at another version than the token: versions never go back) or that an
 * earlier job of the same id left, each at the version read, and the worker
 * directories found empty. Every delete carries the leader's fence.
 * Resolves with the number of requests deleted.
 */
export async function sweepCancels(store: ProtocolContext, fence: () => ProtocolOp[]): Promise<number> {
  const { layout, session } = store;
  let swept = 0;
  for (const name of await store.children(layout.cancelsDir)) {
    const dir = `${layout.cancelsDir}/${name}`;
    const names = await store.children(dir);
    if (names.length === 0) {
      // a request made since fails the delete (not empty): the directory stays
      await store.executor.run([{ build: () => ({ ops: [{ op: 'delete', path: dir }] }) }], { fence, receipt: false });
      continue;
    }
    for (let i = 0; i < names.length; i += READ_BATCH) {
      const batch = names.slice(i, i + READ_BATCH);
      const requests = await session.readMulti(batch.map((n) => ({ op: 'getData' as const, path: `${dir}/${n}` })));
      const pointers = await Promise.all(
        requests.map((r) => {
          const pointer = r.ok ? pointerOf(r.data) : undefined;
          return pointer ? session.exists(pointer) : null;
        }),
      );
      const stale = batch.flatMap((n, j) => {
        const request = requests[j];
        if (!request?.ok) return [];
        const current = isCurrent(request.stat, parseCancelName(n)?.token, pointers[j]);
        return current ? [] : [{ path: `${dir}/${n}`, version: request.stat.version }];
      });
      const units = stale.map((r) => ({
        build: () => ({ ops: [{ op: 'delete' as const, path: r.path, version: r.version }] }),
      }));
      // read back by its receipt, as a worker's deletes are (dropCancelRequests)
      const results = await store.executor.run(units, { fence });
      swept += results.filter((r) => r.ok).length;
    }
  }
  return swept;
}
