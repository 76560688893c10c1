/**
 * Group commit of enqueues: calls of one turn of the event loop share one
 * executor run (fewer multis), in the order of the calls, and each call
 * gets its own units' results back, even when another call's multi failed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BadArgumentsError, type ProtocolOp, QueueLayout, type TxUnit } from '@zkq/core';
import { EnqueueBatch } from '../../packages/core/src/queue/runtime/enqueue-batch.ts';
import { fakeExecutor } from '../helpers/fake-session.ts';

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
