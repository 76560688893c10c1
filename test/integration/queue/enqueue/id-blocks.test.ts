/** QueueStore.nextIds: id blocks sized to demand, unique across stores, continuing an older counter. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Session } from '@zkq/core';
import { ID_BLOCK_SIZE, QueueStore } from '@zkq/core/internal';
import { testSession } from '../../../helpers/zk.js';

/** A store of a queue whose nodes exist (as Queue makes it). */
async function ready(session: Session, queue: string): Promise<QueueStore> {
  const store = new QueueStore(session, queue);
  await store.init();
  return store;
}

test('a store that needs few ids takes few: ids run 1, 2, 3 across stores', async (t) => {
  const session = await testSession(t);
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push(...(await (await ready(session, 'few')).nextIds(1)));
  assert.deepEqual(ids, ['1', '2', '3']);
  assert.deepEqual(await (await ready(session, 'few')).nextIds(4), ['4', '5', '6', '7']);
});

test('blocks grow with demand, so a busy store refills rarely', async (t) => {
  const session = await testSession(t);
  const store = await ready(session, 'busy');
  const ids: string[] = [];
  for (let i = 0; i < 3000; i++) ids.push(...(await store.nextIds(1)));
  assert.deepEqual(ids.slice(0, 3), ['1', '2', '3']);
  assert.equal(new Set(ids).size, 3000);
  const { stat } = await session.getData(store.layout.ids);
  // Blocks of 1, 2, 4, ... 512, then 1000: 14 writes of the counter (one create, 13 updates), not 3000.
  assert.ok(stat.version <= 14, `the counter was written ${stat.version + 1} times`);
});

test('concurrent callers share refills; concurrent stores never hand out the same id', async (t) => {
  const session = await testSession(t);
  const stores = await Promise.all(Array.from({ length: 4 }, () => ready(session, 'shared')));
  const batches = await Promise.all(
    stores.flatMap((store) => Array.from({ length: 50 }, (_, i) => store.nextIds((i % 5) + 1))),
  );
  const all = batches.flat();
  assert.equal(all.length, 4 * 10 * (1 + 2 + 3 + 4 + 5));
  assert.equal(new Set(all).size, all.length, 'no id twice');
  for (const [i, batch] of batches.entries()) assert.equal(batch.length, ((i % 50) % 5) + 1);
});

test('a counter left by the fixed-block allocator continues past its last block', async (t) => {
  const session = await testSession(t);
  const store = await ready(session, 'older');
  // The earlier allocator wrote no data; the version numbered its blocks of ID_BLOCK_SIZE.
  await session.create(store.layout.ids);
  await session.setData(store.layout.ids, Buffer.alloc(0));
  await session.setData(store.layout.ids, Buffer.alloc(0)); // version 2: ids below 3 * ID_BLOCK_SIZE were used
  assert.deepEqual(await store.nextIds(2), [String(3 * ID_BLOCK_SIZE), String(3 * ID_BLOCK_SIZE + 1)]);
});
