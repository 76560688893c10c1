/**
 * `opts.parent.queue` is the parent's queue name, or BullMQ's qualified
 * `<prefix>:<queue>`. A flow lives in one namespace, and a qualified name of
 * ANOTHER namespace is not refused: its prefix is dropped, and the child is
 * counted into the job of that id in the same-named queue of this
 * namespace, an unrelated job (numeric ids repeat from namespace to
 * namespace). It must be refused, as a FlowProducer refuses a node's
 * foreign `prefix`, before anything is written.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../helpers/queue.js';

test("a parent named in another namespace's queue is refused, not matched to this namespace's job of that id", async (t) => {
  const env = await queueEnv(t);
  const here = new Queue('orders', env);
  const kids = new Queue('kids', env);
  t.after(() => Promise.all([here.close(), kids.close()]));
  // this namespace's job 1 of 'orders', unrelated to the parent meant below
  const unrelated = await here.add('unrelated', {});
  assert.equal(unrelated.id, '1');
  const refused = await kids.add('kid', {}, { parent: { id: '1', queue: 'other-namespace:orders' } }).then(
    () => undefined,
    (err: Error & { code?: string }) => err,
  );
  assert.deepEqual(
    await unrelated.getDependenciesCount(),
    { processed: 0, unprocessed: 0, ignored: 0, failed: 0 },
    "the child was counted into this namespace's unrelated job 1",
  );
  assert.ok(
    refused && ['ZKQ_INVALID_ARGUMENT', 'ZKQ_MISSING_PARENT'].includes(refused.code ?? ''),
    `refused with ${refused}`,
  );
});
