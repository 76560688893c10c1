/**
 * Group commit of enqueues: calls of one turn of the event loop share one
 * executor run (fewer multis), in the order of the calls, and each call
 * gets its own units' results back, even when another call's multi failed.
 * At most two runs are in flight; calls made meanwhile share the next. A
 * unit a failed create offers in its place keeps that place in the run.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BadArgumentsError, NodeExistsError } from '@zkq/core';
import { type ProtocolOp, QueueLayout, type TxUnit, type UnitResult } from '@zkq/core/internal';
import { EnqueueBatch, type EnqueueUnit } from '../../packages/core/src/queue/protocol/add-batch.ts';
import { atOp, fakeExecutor } from '../helpers/fake-session.ts';

const layout = new QueueLayout('q');

function unit(id: string): TxUnit {
  const op: ProtocolOp = { op: 'create', path: layout.job(id), data: Buffer.from(id) };
  return { build: () => ({ ops: [op] }) };
}

const idsIn = (multi: readonly { path: string }[]) => multi.map((op) => op.path.split('/').pop());

test('calls of one turn share one multi, in call order; each gets its own results', async () => {
  const { session, executor } = fakeExecutor(layout);
  const batch = new EnqueueBatch(executor);
  const calls = [['a'], ['b', 'c'], ['d']].map((ids) => batch.run(ids.map(unit), 8));
  const results = await Promise.all(calls);
  assert.deepEqual(
    results.map((r) => r.length),
    [1, 2, 1],
  );
  assert.ok(results.flat().every((r) => r.ok));
  assert.equal(session.sent.length, 1, 'one multi for the four jobs');
  assert.deepEqual(idsIn(session.sent[0] ?? []).slice(0, 4), ['a', 'b', 'c', 'd']);
});

test('a call whose multi failed fails alone: one that committed before it is reported added', async () => {
  const { session, executor } = fakeExecutor(layout);
  const batch = new EnqueueBatch(executor);
  const err = new BadArgumentsError('refused');
  let multis = 0;
  session.respond = (multi) => {
    multis++;
    if (multis === 2) throw err;
    return session.applied(multi);
  };
  // units too large to share a multi: one multi per call
  const big = (id: string): TxUnit => ({
    build: () => ({ ops: [{ op: 'create', path: layout.job(id), data: Buffer.alloc(600 * 1024) }] }),
  });
  const [first, second] = await Promise.all([batch.run([big('a')], 1), batch.run([big('b')], 1)]);
  assert.equal(first?.[0]?.ok, true);
  assert.equal(second?.[0]?.ok, false);
});

test('a call made while a run is in flight goes into the next run', async () => {
  const { session, executor } = fakeExecutor(layout);
  const batch = new EnqueueBatch(executor);
  const one = batch.run([unit('a')], 8);
  await one;
  await batch.run([unit('b')], 8);
  assert.equal(session.sent.length, 2);
});

/** An EnqueueBatch whose executor sends each run at once and holds its reply until the test settles it; a unit's result names its job. */
function heldRuns() {
  const { executor } = fakeExecutor(layout);
  const batch = new EnqueueBatch(executor);
  const runs: { ids: string[]; inFlight?: number; settleAll?: boolean; settle: (err?: Error) => void }[] = [];
  const counts = { running: 0, most: 0 };
  executor.run = async (units, o = {}) => {
    const ids = await Promise.all(units.map(async (u) => idsIn((await u.build()).ops)[0] ?? ''));
    for (const u of units) u.sending?.(); // sent at once: only the reply is held
    counts.running++;
    counts.most = Math.max(counts.most, counts.running);
    try {
      await new Promise<void>((resolve, reject) => {
        runs.push({
          ids,
          inFlight: o.inFlight,
          settleAll: o.settleAll,
          settle: (err) => (err ? reject(err) : resolve()),
        });
      });
    } finally {
      counts.running--;
    }
    return ids.map((id) => ({ ok: true, results: [{ op: 'create', path: id }] }));
  };
  return { batch, runs, counts };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

test('at most two runs are in flight: calls made meanwhile wait and share the next run', async () => {
  const { batch, runs, counts } = heldRuns();
  const idsOf = (results: UnitResult[]) =>
    results.map((r) => {
      const created = r.ok ? r.results?.[0] : undefined;
      return created?.op === 'create' ? created.path : undefined;
    });

  // one call a turn: two runs start, the next calls wait
  const c0 = batch.run([unit('a')], 8);
  await turn();
  const c1 = batch.run([unit('b')], 8);
  await turn();
  const c2 = batch.run([unit('c')], 8);
  await turn();
  const c3 = batch.run([unit('d'), unit('e')], 2);
  await turn();
  const c4 = batch.run([unit('f')], 8);
  await turn();
  await turn();
  assert.deepEqual(
    runs.map((r) => r.ids),
    [['a'], ['b']],
  );

  // the first run ends: the three waiting calls share the next, in call order
  runs[0]?.settle();
  assert.deepEqual(idsOf(await c0), ['a']);
  await turn();
  assert.deepEqual(runs[2]?.ids, ['c', 'd', 'e', 'f']);
  assert.equal(runs[2]?.inFlight, 2, 'the least asked');
  assert.equal(runs[2]?.settleAll, true, 'shared by several calls');

  // a call made now waits too; the second run fails its own call only, and the next run starts
  const c5 = batch.run([unit('g')], 8);
  await turn();
  assert.equal(runs.length, 3);
  const failure = new Error('run failed');
  runs[1]?.settle(failure);
  await assert.rejects(c1, failure);
  await turn();
  assert.deepEqual(runs[3]?.ids, ['g']);
  assert.equal(runs[3]?.settleAll, false);

  runs[2]?.settle();
  runs[3]?.settle();
  assert.deepEqual((await Promise.all([c2, c3, c4, c5])).map(idsOf), [['c'], ['d', 'e'], ['f'], ['g']]);
  assert.equal(counts.most, 2);
});

test('no run starts beside a run of one multi at a time until it ends, whatever other run ends first', async () => {
  const { batch, runs } = heldRuns();
  batch.run([unit('a')], 8);
  await turn();
  const serial = batch.run([unit('b')], 1); // a custom id or a dedup key: inFlight 1
  await turn();
  assert.deepEqual(
    runs.map((r) => r.ids),
    [['a'], ['b']],
  );
  runs[0]?.settle(); // the plain run ends first
  await turn();
  batch.run([unit('c')], 8);
  await turn();
  await turn();
  assert.equal(runs.length, 2, 'a later run waits for the serial one');
  runs[1]?.settle();
  await serial;
  await turn();
  assert.deepEqual(runs[2]?.ids, ['c']);
  runs[2]?.settle();
});

test('a call resolves once its own multi committed, while a later multi of the shared run is still in flight', async () => {
  const { session, executor } = fakeExecutor(layout);
  const batch = new EnqueueBatch(executor);
  let release!: () => void;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  session.respond = async (multi, index) => {
    if (index === 1) await held; // the second multi's reply is slow
    return session.applied(multi);
  };
  // units too large to share a multi: one multi per call, both in flight (inFlight 2)
  const big = (id: string): TxUnit => ({
    build: () => ({ ops: [{ op: 'create', path: layout.job(id), data: Buffer.alloc(600 * 1024) }] }),
  });
  let secondDone = false;
  const first = batch.run([big('a')], 2);
  const second = batch.run([big('b')], 2).then((r) => {
    secondDone = true;
    return r;
  });
  const [a] = await first;
  assert.equal(a?.ok, true);
  assert.equal(secondDone, false, 'the first call did not wait for the rest of the run');
  assert.equal(session.sent.length, 2, 'both multis were in flight');
  release();
  const [b] = await second;
  assert.equal(b?.ok, true);
});

test('a run started while another still has multis to send waits until they are sent', async () => {
  const { session, executor } = fakeExecutor(layout);
  const batch = new EnqueueBatch(executor);
  const held: (() => void)[] = [];
  session.respond = async (multi) => {
    await new Promise<void>((resolve) => held.push(resolve));
    return session.applied(multi);
  };
  // ten multis, at most eight awaiting replies: the last two go once replies come
  const big = (id: string): TxUnit => ({
    build: () => ({ ops: [{ op: 'create', path: layout.job(id), data: Buffer.alloc(600 * 1024) }] }),
  });
  const first = batch.run(
    Array.from({ length: 10 }, (_, n) => big(`a${n}`)),
    8,
  );
  while (session.sent.length < 8) await turn();
  const second = batch.run([unit('b')], 8);
  await turn();
  await turn();
  while (held.length > 0) {
    for (const release of held.splice(0)) release();
    await turn();
  }
  await Promise.all([first, second]);
  assert.deepEqual(
    session.sent.map((multi) => idsIn(multi)[0]),
    [...Array.from({ length: 10 }, (_, n) => `a${n}`), 'b'],
  );
});

test("a unit a call's failed create offers in its place keeps that place: later calls' jobs commit after it", async () => {
  const { session, executor } = fakeExecutor(layout);
  const batch = new EnqueueBatch(executor);
  const key = layout.dedupKey('k');
  session.respond = (multi, n) => {
    if (n === 0) throw atOp(new NodeExistsError(key), 1); // a's job, a's key create
    return session.applied(multi);
  };
  const settled: boolean[] = [];
  const instead: EnqueueUnit = {
    seesEarlier: true,
    build: () => ({ ops: [{ op: 'create', path: layout.job('a'), data: Buffer.from('a') }] }),
    settled: (r) => settled.push(r.ok),
  };
  const taker: EnqueueUnit = {
    build: () => ({
      ops: [
        { op: 'create', path: layout.job('a'), data: Buffer.from('a') },
        { op: 'create', path: key },
      ],
    }),
    onConflict: (error, op) => (error instanceof NodeExistsError && op.path === key ? instead : undefined),
  };
  const calls = [batch.run([taker], 1), batch.run([unit('b')], 8), batch.run([unit('c')], 8)];
  const results = await Promise.all(calls);
  assert.ok(results.flat().every((r) => r.ok));
  assert.deepEqual(settled, [true], 'the unit offered was told, and the call got its result');
  // each multi ends with its receipt
  assert.deepEqual(
    session.sent.map((m) => idsIn(m.slice(0, -1))),
    [
      ['a', 'd-k', 'b', 'c'],
      ['a', 'b', 'c'],
    ],
  );
});
