/**
 * A settings compare-and-set whose reply was lost: it is read back by its
 * receipt, never sent again as it was. The settings node is deleted with its
 * last field and made again at version 0, so a write at the version read,
 * sent again blind, could land on the new node and drop what other writers
 * set meanwhile. Nor is it planned again: a new plan sees its own write and
 * answers otherwise (a field it removed found gone: 0).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Session } from '@zkq/core';
import {
  getGlobalConcurrency,
  getGlobalRateLimit,
  QueueStore,
  removeSettings,
  setGlobalConcurrency,
  setGlobalRateLimit,
} from '@zkq/core/internal';
import { cleanups } from '../../helpers/cleanups.js';
import { OP, request } from '../../helpers/fault-proxy.js';
import { proxied, within } from '../../helpers/proxied-worker.js';
import { queueEnv } from '../../helpers/queue.js';
import { prefixSession } from '../../helpers/znodes.js';

test('a settings write whose reply was lost loses no field another client set meanwhile', async (t) => {
  const env = await queueEnv(t);
  const defer = cleanups(t);
  const { proxy, via } = await proxied(defer, env);
  const name = 'settings-reply-lost';
  const cut = await Session.connect({ ...via.connection, namespace: `/${env.prefix}` });
  defer(() => cut.close());
  const mine = new QueueStore(cut, name);
  const other = new QueueStore(await prefixSession(t, env), name);
  await other.init();
  await setGlobalConcurrency(other, 2); // the settings node, version 0
  // this client's change is written at version 0 and applies; its reply is lost, and it stays
  // cut off while another client removes the last field (the node goes) and sets a rate limit
  // (the node is made again, at version 0)
  let reconnect!: () => void;
  const released = new Promise<void>((r) => {
    reconnect = r;
  });
  const lost = proxy.loseReply(request(OP.multi, `/${name}/settings`), released);
  const late = setGlobalConcurrency(mine, 5);
  await within(lost.fired, 'the settings write sent');
  assert.equal(await removeSettings(other, ['concurrency']), 1);
  await setGlobalRateLimit(other, 10, 1000);
  reconnect();
  await within(late, 'the lost write settled');
  assert.deepEqual(await getGlobalRateLimit(other), { max: 10, duration: 1000 }, 'the rate limit set meanwhile');
  assert.equal(await getGlobalConcurrency(other), null, "this client's concurrency, removed after it was set");
});

test('a settings write whose reply was lost answers as it did: the field it removed existed', async (t) => {
  const env = await queueEnv(t);
  const defer = cleanups(t);
  const { proxy, via } = await proxied(defer, env);
  const name = 'settings-answer-reply-lost';
  const cut = await Session.connect({ ...via.connection, namespace: `/${env.prefix}` });
  defer(() => cut.close());
  const mine = new QueueStore(cut, name);
  const other = new QueueStore(await prefixSession(t, env), name);
  await other.init();
  await setGlobalConcurrency(other, 2);
  await setGlobalRateLimit(other, 10, 1000); // the node stays when the concurrency goes
  // read back by its receipt, not planned again: a new plan found the field gone and answered 0
  const lost = proxy.loseReply(request(OP.multi, `/${name}/settings`));
  assert.equal(await within(removeSettings(mine, ['concurrency']), 'the removal settled'), 1);
  assert.ok(lost.hasFired, "the removal's reply was lost");
  assert.equal(await getGlobalConcurrency(other), null);
});
