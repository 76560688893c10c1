/**
 * The pure part of deduplication: when a key is live (ttl on ZooKeeper's
 * clock; otherwise while its job is neither completed nor failed), what an
 * add that meets a key does (BullMQ's deduplicateJob), the job a
 * keepLastIfActive finish adds, and how a finish that lost a race for its
 * key is planned again.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { DeduplicationOptions } from '@zkq/core';
import {
  DEDUP_ROUNDS,
  decide,
  handoffAfterConflict,
  handoffRecord,
  isLive,
  type JobRecord,
  type KeyRead,
  QueueLayout,
  type RecordState,
  type Seen,
} from '@zkq/core/internal';

const T0 = 1_900_000_000_000;

function record(over: Partial<JobRecord> = {}): JobRecord {
  return {
    v: 1,
    id: 'k',
    name: 'n',
    data: {},
    opts: {},
    progress: 0,
    attemptsMade: 0,
    attemptsStarted: 0,
    stalledCounter: 0,
    timestamp: T0,
    delay: 0,
    priority: 0,
    stacktrace: [],
    state: 'waiting',
    ...over,
  };
}

function read(key: KeyRead['key'], mtime = T0): KeyRead {
  return { key, version: 3, mtime };
}

/** What an add sees: a live key keeping job `k` in `state` (and running, with `active`). */
function seen(state: RecordState, o: { active?: boolean; ttl?: number; keptOpts?: JobRecord['opts'] } = {}): Seen {
  const key = o.ttl === undefined ? { job: 'k' } : { job: 'k', ttl: o.ttl };
  return {
    read: read(key),
    live: true,
    kept: { record: record({ state, opts: o.keptOpts ?? {} }), version: 1 },
    active: o.active ?? false,
    now: o.ttl === undefined ? undefined : T0 + 400,
  };
}

describe('isLive', () => {
  test('a ttl key lives ttl ms from its mtime on the server clock, whatever its job', () => {
    const r = read({ job: 'k', ttl: 1000 });
    assert.equal(isLive(r, T0 + 999, undefined), true);
    assert.equal(isLive(r, T0 + 1000, 'waiting'), false);
    assert.equal(isLive(r, T0 + 10, 'completed'), true);
    assert.equal(isLive(r, undefined, 'waiting'), false);
  });

  test('a key without ttl lives while its job exists and has not finished', () => {
    const r = read({ job: 'k' });
    for (const state of ['waiting', 'active', 'delayed'] as const) assert.equal(isLive(r, undefined, state), true);
    for (const state of ['completed', 'failed', undefined] as const) assert.equal(isLive(r, T0, state), false);
  });
});

describe('decide', () => {
  const d = (o: Partial<DeduplicationOptions> = {}): DeduplicationOptions => ({ id: 'x', ...o });

  test('a missing or stale key is taken; keepLastIfActive writes no ttl', () => {
    const none: Seen = { read: undefined, live: false, kept: undefined, active: false, now: undefined };
    assert.deepEqual(decide(d({ ttl: 50 }), none), { kind: 'take', ttl: 50 });
    assert.deepEqual(decide(d(), { ...seen('completed'), live: false }), { kind: 'take', ttl: undefined });
    assert.deepEqual(decide(d({ ttl: 50, keepLastIfActive: true }), none), { kind: 'take', ttl: undefined });
  });

  test('a live key keeps its job and logs deduplicated; extend rewrites a ttl key', () => {
    assert.deepEqual(decide(d(), seen('waiting')), {
      kind: 'keep',
      event: true,
      rewrite: undefined,
      reschedule: false,
    });
    assert.deepEqual(decide(d({ ttl: 80, extend: true }), seen('active', { ttl: 80 })), {
      kind: 'keep',
      event: true,
      rewrite: { ttl: 80 },
      reschedule: false,
    });
    assert.equal(decide(d({ extend: true }), seen('waiting')).kind, 'keep');
    assert.deepEqual((decide(d({ extend: true }), seen('waiting')) as { rewrite: unknown }).rewrite, undefined);
  });

  test('reschedule moves only a delayed kept job', () => {
    assert.equal((decide(d({ reschedule: true }), seen('delayed')) as { reschedule: boolean }).reschedule, true);
    assert.equal((decide(d({ reschedule: true }), seen('waiting')) as { reschedule: boolean }).reschedule, false);
    assert.equal((decide(d({ reschedule: true, replace: true }), seen('delayed')) as { kind: string }).kind, 'replace');
  });

  test('replace: a delayed kept job is replaced, keeping what is left of the ttl unless extend', () => {
    assert.deepEqual(decide(d({ replace: true }), seen('delayed')), { kind: 'replace', ttl: undefined });
    assert.deepEqual(decide(d({ replace: true, ttl: 1000 }), seen('delayed', { ttl: 1000 })), {
      kind: 'replace',
      ttl: 600,
    });
    assert.deepEqual(decide(d({ replace: true, ttl: 1000, extend: true }), seen('delayed', { ttl: 1000 })), {
      kind: 'replace',
      ttl: 1000,
    });
    assert.deepEqual(decide(d({ replace: true, ttl: 1000 }), seen('delayed')), { kind: 'replace', ttl: undefined });
    // nothing to replace: kept, and no event (BullMQ's)
    assert.deepEqual(decide(d({ replace: true }), seen('waiting')), {
      kind: 'keep',
      event: false,
      rewrite: undefined,
      reschedule: false,
    });
  });

  test('keepLastIfActive parks a duplicate of a running kept job added with it too', () => {
    const keeps = { deduplication: { id: 'x', keepLastIfActive: true } };
    const o = d({ keepLastIfActive: true });
    assert.deepEqual(decide(o, seen('active', { active: true, keptOpts: keeps })), { kind: 'park' });
    assert.deepEqual(decide({ ...o, replace: true }, seen('active', { active: true, keptOpts: keeps })), {
      kind: 'park',
    });
    assert.equal(decide(o, seen('waiting', { keptOpts: keeps })).kind, 'keep', 'not running: deduplicated');
    assert.equal(decide(o, seen('active', { active: true })).kind, 'keep', 'a kept job without the option');
  });
});

describe('handoffRecord', () => {
  test('the parked job waits from the finish, in its lane; with a delay, due that long after it', () => {
    const parked = record({ id: 'p', lane: 'l', timestamp: T0 - 5000, due: T0 + 1 });
    assert.deepEqual(handoffRecord(parked, T0 + 100), {
      ...parked,
      timestamp: T0 + 100,
      state: 'waiting',
      due: undefined,
    });
    const delayed = record({ id: 'p', opts: { delay: 250 }, delay: 250 });
    const added = handoffRecord(delayed, T0 + 100);
    assert.equal(added.state, 'delayed');
    assert.equal(added.due, T0 + 350);
    assert.equal(added.lane, 'p-0000000000');
  });
});

describe('handoffAfterConflict', () => {
  const layout = new QueueLayout('q');
  const keyOp = { op: 'delete' as const, path: layout.dedupKey('x'), version: 3 };
  const conflict = new Error('bad version');
  const finished = (deduplication: DeduplicationOptions) => record({ opts: { deduplication } });

  test('a simple-mode finish whose key changed reads it again, and gives the key up after DEDUP_ROUNDS', () => {
    const simple = finished({ id: 'x' });
    assert.equal(handoffAfterConflict(layout, simple, 'next', keyOp, conflict, 1), 'next');
    assert.equal(handoffAfterConflict(layout, simple, 'next', keyOp, conflict, DEDUP_ROUNDS), 'none');
    // a key deleted by the sweep or by hand since the read (the generation of keys): read again
    const generation = { op: 'check' as const, path: layout.dedupDir, version: 4 };
    assert.equal(handoffAfterConflict(layout, simple, 'next', generation, conflict, 1), 'next');
    assert.equal(handoffAfterConflict(layout, simple, 'next', generation, conflict, DEDUP_ROUNDS), 'none');
    // another op of the finish is none of the key's business
    const other = { op: 'delete' as const, path: layout.claim('k') };
    assert.equal(handoffAfterConflict(layout, simple, 'next', other, conflict, 1), undefined);
  });

  test("a finish of a job added with a ttl never writes its key, so no conflict is the key's", () => {
    assert.equal(handoffAfterConflict(layout, finished({ id: 'x', ttl: 1000 }), 'next', keyOp, conflict, 1), undefined);
    assert.equal(handoffAfterConflict(layout, record(), 'next', keyOp, conflict, 1), undefined);
  });
});
