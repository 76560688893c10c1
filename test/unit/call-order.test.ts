import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CallOrder } from '@zkq/core/internal';

/** Lets every pending promise callback run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

test('a turn goes on only once every earlier turn has passed', async () => {
  const order = new CallOrder();
  const first = order.enter();
  const second = order.enter();
  const third = order.enter();
  const through: number[] = [];
  void third.wait().then(() => through.push(3));
  void second.wait().then(() => through.push(2));
  await first.wait();
  await settle();
  assert.deepEqual(through, []);
  // the second gives up its place first (it failed early): the third still waits for the first
  second.pass();
  await settle();
  assert.deepEqual(through, []);
  first.pass();
  await settle();
  assert.deepEqual(through, [2, 3]);
});

test('passing twice is harmless, and a line that emptied lets the next turn go at once', async () => {
  const order = new CallOrder();
  const a = order.enter();
  a.pass();
  a.pass();
  const b = order.enter();
  let went = false;
  void b.wait().then(() => {
    went = true;
  });
  await settle();
  assert.equal(went, true);
});

test('run takes its place when called and gives it up when its work fails', async () => {
  const order = new CallOrder();
  const failed = order.run(async (turn) => {
    await turn.wait();
    throw new Error('boom');
  });
  const later = order.run(async (turn) => {
    await turn.wait();
    return 'went';
  });
  await assert.rejects(failed, /boom/);
  assert.equal(await later, 'went');
});
