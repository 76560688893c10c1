/**
 * A child added to an existing parent first deletes the dependency node an
 * earlier job of the parent's id left (blind deletes, deepest first). When
 * that transaction's reply was lost after the server applied it, it is read
 * back by its receipt: sent again as it was, it deleted the node another
 * add had made meanwhile under the same names (the same child added to the
 * same parent), and the parent lost its pending child.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { OP, request } from '../../helpers/fault-proxy.js';
import { within } from '../../helpers/proxied-worker.js';
import { storeAcrossProxy } from '../../helpers/reply-lost.js';

test("the deletion of an earlier job's dependency node whose reply was lost leaves the node made meanwhile", async (t) => {
  const name = 'stale-deps-reply-lost';
  const { proxy, other, queue, env, via, defer } = await storeAcrossProxy(t, name);
  const { layout, session } = other;
  const kid = { queue: 'kids', id: 'kid' };
  // a dependency node left under the id by an earlier parent, older than the parent added next
  await other.ensureDir(layout.depsShard('mum'));
  await session.create(layout.deps('mum'), Buffer.from(JSON.stringify({ pending: 1, bucketed: true })));
  await session.create(layout.depBucket('mum', kid), Buffer.alloc(0));
  await session.create(layout.depEntry('mum', 'u', kid), Buffer.alloc(0));
  await queue.add('parent', {}, { jobId: 'mum' });
  const kidsHere = new Queue('kids', via);
  const kidsThere = new Queue('kids', env);
  defer(() => Promise.all([kidsHere.close(), kidsThere.close()]));
  await kidsHere.waitUntilReady();
  let reconnect!: () => void;
  const released = new Promise<void>((r) => {
    reconnect = r;
  });
  const lost = proxy.loseReply(request(OP.multi, 'mum/b-'), released);
  const parent = { id: 'mum', queue: name };
  const adding = kidsHere.add('kid', { v: 1 }, { jobId: 'kid', parent }).catch((err: unknown) => err);
  await within(lost.fired, 'the stale node deleted, the reply lost');
  // while this adder is cut off, another adds the same child to the same parent
  await kidsThere.add('kid', { v: 2 }, { jobId: 'kid', parent });
  reconnect();
  await within(adding, 'the first add settled');
  assert.notEqual(await session.exists(layout.depEntry('mum', 'u', kid)), null, "the child's entry is there");
  const { data } = await session.getData(layout.deps('mum'));
  assert.equal((JSON.parse(data.toString()) as { pending: number }).pending, 1);
});
