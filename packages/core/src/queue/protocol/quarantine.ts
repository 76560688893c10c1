/**
 * A job whose record cannot be read is moved to failed/ with a readable
 * record in its place, so that no worker meets it again. Called by the
 * JobSource when a claim finds one.
 */
import { encodeRecord, type JobRecord } from '../record.js';
import { type Destination, fillOp, moveOps } from './builders.js';
import type { Candidate } from './claim.js';
import type { ProtocolContext } from './context.js';

/**
 * Moves a job whose record cannot be read to failed/, replacing the record
 * with a readable one that keeps the reason and the start of the original
 * text. Resolves false when the node is not a job zkq can move.
 */
export async function quarantineMalformed(
  store: ProtocolContext,
  candidate: Candidate,
  error: Error,
): Promise<boolean> {
  let data: Buffer;
  let version: number;
  try {
    ({
      data,
      stat: { version },
    } = await store.session.getData(store.layout.job(candidate.id)));
  } catch {
    return false;
  }
  const record = quarantineRecord(candidate.id, error.message, data.toString('utf8', 0, 2000));
  const [result] = await store.executor.run([
    {
      build: async () => ({
        ops: [
          ...moveOps(
            store.layout,
            { id: candidate.id, version, record: encodeRecord(record), from: candidate.pointer },
            (await store.destination({ kind: 'failed' })) as Destination,
          ),
          // the failed set grew: counts cached by bounded finishes must be read again
          fillOp(store.layout, 'failed', { kind: 'touch' }),
        ],
      }),
    },
  ]);
  return result?.ok === true;
}

function quarantineRecord(id: string, reason: string, raw: string): JobRecord {
  const now = Date.now();
  return {
    v: 1,
    id,
    name: '(malformed)',
    data: { raw },
    opts: {},
    progress: 0,
    attemptsMade: 0,
    attemptsStarted: 0,
    stalledCounter: 0,
    timestamp: now,
    delay: 0,
    priority: 0,
    stacktrace: [],
    failedReason: reason,
    finishedOn: now,
    state: 'failed',
  };
}
