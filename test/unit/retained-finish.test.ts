/**
 * A finish with its retention, as both front-ends write it (core's
 * finishRetained): removal at once or the set's bounds on the finish, and
 * what the finish left handed to the Trimmer, for the set the job went to.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KeepJobs } from '@zkq/core';
import {
  type ClaimedJob,
  type Finish,
  type FinishedKind,
  type FinishResult,
  finishRetained,
  type Retention,
  retentionOf,
} from '@zkq/core/internal';

const job = { record: { id: '1' } } as unknown as ClaimedJob;

/** Runs finishRetained with `retention` per set, the write answering `result`; what was written and trimmed. */
async function run(f: Finish, retention: Partial<Record<FinishedKind, Retention>>, result: FinishResult) {
  const written: Finish[] = [];
  const trims: [FinishedKind, KeepJobs][] = [];
  const out = await finishRetained(f, {
    retention: (kind) => retention[kind] ?? retentionOf(kind, undefined),
    write: async (w) => {
      written.push(w);
      return result;
    },
    trim: (kind, keep) => trims.push([kind, keep]),
  });
  return { out, written, trims };
}

const completed = (): Finish => ({ job, outcome: { kind: 'completed', returnvalue: 1, remove: false } });

test('retention options: true or a count of 0 removes, false keeps all, a number is a count, none the defaults', () => {
  assert.equal(retentionOf('completed', true), 'remove');
  assert.equal(retentionOf('failed', 0), 'remove');
  assert.equal(retentionOf('failed', { count: 0, age: 5 }), 'remove');
  assert.deepEqual(retentionOf('completed', false), {});
  assert.deepEqual(retentionOf('completed', 3), { count: 3 });
  assert.deepEqual(retentionOf('completed', undefined), { count: 1000 });
  assert.deepEqual(retentionOf('failed', undefined), { count: 5000 });
});

test('a job removed at once: its finish deletes it and nothing is left to trim', async () => {
  const { written, trims } = await run(completed(), { completed: 'remove' }, { ok: true });
  assert.equal(written[0]?.outcome.kind === 'completed' && written[0].outcome.remove, true);
  assert.equal(written[0]?.keep, undefined);
  assert.deepEqual(trims, []);
});

test('a count kept by the finish asks nothing of the Trimmer; one it could not keep, or an age, does', async () => {
  const kept = await run(completed(), { completed: { count: 2 } }, { ok: true });
  assert.deepEqual(kept.written[0]?.keep, { count: 2 });
  assert.deepEqual(kept.trims, []);
  const later = await run(completed(), { completed: { count: 2, age: 60 } }, { ok: true, trimLater: true });
  assert.deepEqual(later.trims, [['completed', { count: 2, age: 60 }]]);
  const aged = await run(completed(), { completed: { count: 2, age: 60 } }, { ok: true });
  assert.deepEqual(aged.trims, [['completed', { age: 60 }]]);
});

test('a completion written as a failure in its place (too large) trims the failed set by its retention', async () => {
  const replaced = { kind: 'failed' as const, reason: 'too large', stacktrace: [], remove: false };
  const { trims } = await run(
    completed(),
    { completed: { age: 60 }, failed: { count: 5, age: 30 } },
    { ok: true, replaced },
  );
  assert.deepEqual(trims, [['failed', { age: 30 }]]);
});

test('a retry carries no bounds; a failed write trims nothing', async () => {
  const retry: Finish = { job, outcome: { kind: 'retry', reason: 'r', stacktrace: [], due: 0 } };
  const r = await run(retry, { completed: { age: 1 }, failed: { age: 1 } }, { ok: true });
  assert.equal(r.written[0]?.keep, undefined);
  assert.deepEqual(r.trims, []);
  const lost = await run(completed(), { completed: { age: 1 } }, { ok: false, error: new Error('lost') });
  assert.equal(lost.out.ok, false);
  assert.deepEqual(lost.trims, []);
});

test('a job removed at once is asked for dependencies its record does not name; a kept one is not', async () => {
  const asked: string[] = [];
  const write = async (f: Finish, hasDeps: boolean) => {
    let written: Finish | undefined;
    await finishRetained(f, {
      retention: (kind) => (kind === 'completed' ? 'remove' : {}),
      write: async (w) => {
        written = w;
        return { ok: true };
      },
      trim: () => undefined,
      hasDeps: async () => {
        asked.push(f.outcome.kind);
        return hasDeps;
      },
    });
    return written as Finish;
  };
  assert.equal((await write(completed(), true)).job.record.hasDeps, true);
  assert.equal((await write(completed(), false)).job.record.hasDeps, undefined);
  assert.equal(job.record.hasDeps, undefined, 'the claimed record is left as it was');
  const failed: Finish = { job, outcome: { kind: 'failed', reason: 'x', stacktrace: [], remove: false } };
  assert.equal((await write(failed, true)).job.record.hasDeps, undefined);
  assert.deepEqual(asked, ['completed', 'completed']);
});

test('a failure to read the dependencies does not keep the finish from being written', async () => {
  const written: Finish[] = [];
  const out = await finishRetained(completed(), {
    retention: () => 'remove',
    write: async (w) => {
      written.push(w);
      return { ok: true };
    },
    trim: () => undefined,
    hasDeps: () => Promise.reject(new Error('connection lost')),
  });
  assert.equal(out.ok, true);
  assert.equal(written.length, 1);
  assert.equal(written[0]?.job.record.hasDeps, undefined);
});

test('dependencies known at once (no promise) are taken as they are, and the write is handed over in the same turn', async () => {
  for (const [answer, expected] of [
    [true, true],
    [false, undefined],
  ] as const) {
    const written: Finish[] = [];
    const out = finishRetained(completed(), {
      retention: () => 'remove',
      write: async (w) => {
        written.push(w);
        return { ok: true };
      },
      trim: () => undefined,
      hasDeps: () => answer,
    });
    assert.equal(written.length, 1, 'written before any await');
    assert.equal((await out).ok, true);
    assert.equal(written[0]?.job.record.hasDeps, expected);
  }
  const written: Finish[] = [];
  await finishRetained(completed(), {
    retention: () => 'remove',
    write: async (w) => {
      written.push(w);
      return { ok: true };
    },
    trim: () => undefined,
    hasDeps: () => {
      throw new Error('no store');
    },
  });
  assert.equal(written[0]?.job.record.hasDeps, undefined, 'a failure to ask counts as none, as a rejection does');
});
