/**
 * Queue, QueueEvents and FlowProducer close within a bound when ZooKeeper
 * does not answer: a connect still under way is given up at once (close()
 * waited for the whole connect timeout, 15 s), and a connected one waits at
 * most 3 s for the server to confirm its session's end. Asserted with a wide
 * margin: what fails is a wait for a timeout, not a slow machine.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FlowProducer, Queue, QueueEvents } from '@zkq/producer';
import { TcpProxy } from '@zkq/testing';
import { cleanups } from '../../../helpers/cleanups.js';
import { queueEnv } from '../../../helpers/queue.js';

/** Far below the connect timeout (15 s) the close waited for. */
const CONNECTING_BOUND_WITH_MARGIN_MS = 5000;
/** Three times the session's close wait (3 s). */
const CONNECTED_BOUND_WITH_MARGIN_MS = 9000;

async function timed(close: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await close();
  return performance.now() - t0;
}

async function clients(t: { name?: string; after(fn: () => unknown): void }) {
  const env = await queueEnv(t);
  const proxy = await TcpProxy.start(env.connection.connectionString);
  const after = cleanups(t);
  after(() => proxy.stop());
  const open = () => {
    const opts = { ...env, connection: { ...env.connection, connectionString: proxy.connectionString } };
    const made = { queue: new Queue('q', opts), events: new QueueEvents('q', opts), flows: new FlowProducer(opts) };
    after(() => Promise.all([made.queue.close(), made.events.close(), made.flows.close()]));
    return made;
  };
  return { proxy, open };
}

test('closed while connecting to a server out of reach, they return at once', async (t) => {
  const { proxy, open } = await clients(t);
  proxy.cut();
  const { queue, events, flows } = open();
  const took = await Promise.all([timed(() => queue.close()), timed(() => events.close()), timed(() => flows.close())]);
  for (const [i, ms] of took.entries()) {
    assert.ok(
      ms < CONNECTING_BOUND_WITH_MARGIN_MS,
      `close() of ${['queue', 'events', 'flows'][i]} took ${Math.round(ms)} ms`,
    );
  }
});

test('connected, then over a frozen link, they close within the bound', async (t) => {
  const { proxy, open } = await clients(t);
  const { queue, events, flows } = open();
  await Promise.all([queue.waitUntilReady(), events.waitUntilReady(), flows.waitUntilReady()]);
  proxy.freeze();
  const took = await Promise.all([timed(() => queue.close()), timed(() => events.close()), timed(() => flows.close())]);
  for (const [i, ms] of took.entries()) {
    assert.ok(
      ms < CONNECTED_BOUND_WITH_MARGIN_MS,
      `close() of ${['queue', 'events', 'flows'][i]} took ${Math.round(ms)} ms`,
    );
  }
});
