/**
 * A burst of concurrent adds (group-committed: one executor run per turn)
 * under connection faults: afterwards every add that resolved is stored
 * exactly once, and every add that rejected is not stored, unless its error
 * says the outcome is unknown (ZKQ_OUTCOME_UNKNOWN).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from '@zkq/producer';
import { TcpProxy } from '@zkq/testing';
import { queueEnv } from '../../../helpers/queue.js';

const N = 500;

async function burst(t: { name?: string; after(fn: () => unknown): void }, fault: (proxy: TcpProxy) => Promise<void>) {
  const env = await queueEnv(t, 20_000);
  const proxy = await TcpProxy.start(env.connection.connectionString);
  t.after(() => proxy.stop());
  const connection = {
    ...env.connection,
    connectionString: proxy.connectionString,
    requestTimeout: 500,
    retry: { maxAttempts: 3, deadlineMs: 3000 },
  };
  const producer = new Queue('burst', { ...env, connection });
  const reader = new Queue('burst', env);
  t.after(() => producer.close());
  t.after(() => reader.close());
  await producer.waitUntilReady();
  await reader.waitUntilReady();
  const adds = Array.from({ length: N }, (_, n) => producer.add('j', { n }));
  const faulted = fault(proxy);
  const settled = await Promise.allSettled(adds);
  await faulted;
  const stored = new Map<number, number>();
  for (const job of await reader.getJobs(['waiting'], 0, -1)) {
    const n = (job.data as { n: number }).n;
    stored.set(n, (stored.get(n) ?? 0) + 1);
  }
  const problems: string[] = [];
  settled.forEach((s, n) => {
    const count = stored.get(n) ?? 0;
    if (s.status === 'fulfilled' && count !== 1) problems.push(`add ${n} resolved, stored ${count} times`);
    if (s.status === 'rejected' && count > 0 && (s.reason as { code?: string }).code !== 'ZKQ_OUTCOME_UNKNOWN') {
      problems.push(
        `add ${n} rejected with ${String(s.reason)} (${(s.reason as { code?: string }).code}), stored ${count} times`,
      );
    }
    if (count > 1) problems.push(`add ${n} stored ${count} times`);
  });
  return { problems, rejected: settled.filter((s) => s.status === 'rejected').length };
}

test('500 concurrent adds, the connection cut mid-burst and back: each resolved add stored once', async (t) => {
  const { problems } = await burst(t, async (proxy) => {
    await sleep(5);
    proxy.cut();
    await sleep(300);
    proxy.restore();
  });
  assert.deepEqual(problems.slice(0, 5), []);
});

test('500 concurrent adds, replies lost past the retries: an add that rejects is not stored, or says its outcome is unknown', async (t) => {
  const { problems } = await burst(t, async (proxy) => {
    await sleep(5);
    proxy.dropReplies(); // multis in flight are applied, their replies lost
    await sleep(6000);
    proxy.restore();
  });
  assert.deepEqual(problems.slice(0, 5), []);
});
