/**
 * The `ids` counter's compare-and-set whose reply was lost: it is planned
 * again from a fresh read, never sent again as it was. Sent again blind, a
 * write at the version read lands on a counter deleted and made again
 * meanwhile (an obliterate: the new counter starts at version 0 again),
 * moves it back, and the same ids are handed out twice.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Session } from '@zkq/core';
import { obliterate, QueueStore } from '@zkq/core/internal';
import { cleanups } from '../../../helpers/cleanups.js';
import { OP, request } from '../../../helpers/fault-proxy.js';
import { proxied, within } from '../../../helpers/proxied-worker.js';
import { queueEnv } from '../../../helpers/queue.js';
import { prefixSession } from '../../../helpers/znodes.js';

test('a counter write whose reply was lost across an obliterate hands out no id twice in the queue made again', async (t) => {
  const env = await queueEnv(t);
  const defer = cleanups(t);
  const { proxy, via } = await proxied(defer, env);
  const cut = await Session.connect({ ...via.connection, namespace: `/${env.prefix}` });
  defer(() => cut.close());
  const name = 'ids-reply-lost';
  const before = new QueueStore(cut, name);
  assert.deepEqual(await before.nextIds(1), ['1'], 'the counter is made (version 0)');
  // the next block is written at version 0; it applies, its reply is lost, and the store
  // stays cut off while the queue is obliterated and made again, its new counter at version 0
  let reconnect!: () => void;
  const released = new Promise<void>((r) => {
    reconnect = r;
  });
  const lost = proxy.loseReply(request(OP.multi, `/${name}/ids`), released);
  const late = before.nextIds(1);
  await within(lost.fired, 'the counter write sent');
  const other = await prefixSession(t, env);
  const remade = new QueueStore(other, name);
  await obliterate(remade, { force: true });
  const fresh = await remade.nextIds(5);
  assert.deepEqual(fresh, ['1', '2', '3', '4', '5'], 'the new queue counts from 1');
  reconnect();
  const handed = [...fresh, ...(await within(late, 'the lost block settled'))];
  handed.push(...(await new QueueStore(other, name).nextIds(3)));
  assert.equal(new Set(handed).size, handed.length, `ids handed out in the queue made again: ${handed.join(', ')}`);
});
