/**
 * Events logged into a queue another client obliterated: a published event
 * (BullMQ's publishEvent) and events logged on their own while a listener
 * was seen (pause, resume, duplicated) fail with NoNodeError and make
 * nothing of the queue again. Its event log, made again, would bring back
 * the queue's root without `meta`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NoNodeError } from '@zkq/core';
import { logEvents, obliterate, QueueLayout, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';
import { prefixSession } from '../../helpers/znodes.js';

test('an event published into a queue obliterated elsewhere fails with NoNodeError and makes nothing again', async (t) => {
  const env = await queueEnv(t);
  const name = 'published-gone';
  const writer = new QueueStore(await prefixSession(t, env), name);
  await writer.init();
  await logEvents(writer, [{ event: 'custom', ts: Date.now() }]);
  await obliterate(new QueueStore(await prefixSession(t, env), name), { force: true });
  await assert.rejects(logEvents(writer, [{ event: 'custom', ts: Date.now() }]), NoNodeError);
  assert.equal(await writer.session.exists(writer.layout.root), null, 'nothing of the queue made again');
});

test('events logged on their own for a listener, into a queue obliterated elsewhere, fail with NoNodeError', async (t) => {
  const env = await queueEnv(t);
  const name = 'heard-gone';
  const layout = new QueueLayout(name);
  const queue = new Queue(name, env);
  t.after(() => queue.close());
  await queue.add('first', 0);
  const writer = new QueueStore(await prefixSession(t, env), name);
  await writer.init();
  const listener = await prefixSession(t, env);
  await listener.create(`${layout.eventListeners}/by-hand`, undefined, 'ephemeral');
  await waitFor(() => writer.events.enabled, { what: 'the writer to see the listener' });
  await obliterate(new QueueStore(await prefixSession(t, env), name), { force: true });
  // a writer that saw a listener when the queue went keeps logging, for the listener's return
  assert.ok(writer.events.enabled, 'events still logged');
  await assert.rejects(writer.publish([{ event: 'paused', ts: Date.now() }]), NoNodeError);
  assert.equal(await listener.exists(layout.root), null, 'nothing of the queue made again');
});
