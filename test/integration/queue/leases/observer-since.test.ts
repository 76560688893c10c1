/**
 * The leader dates a claim version from when its read RETURNED. A read delayed
 * in transit (here: the connection is cut while it is in flight; the session
 * layer retries it after reconnecting) returns a version written long after
 * the scan began; dated from the scan's start, it looked older than it was,
 * and the next scan revoked a claim that was being renewed on time.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Session } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { TcpProxy } from '@zkq/testing';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

test('a renewing worker keeps its job when one of the leader reads was delayed by a reconnect', async (t) => {
  const t0 = performance.now();
  const env = await queueEnv(t, 6000);
  const queue = new Queue('q', env);
  t.after(async () => {
    const s = performance.now();
    await queue.close();
    console.log('queue closed in', performance.now() - s);
  });
  let release = false;
  const started: string[] = [];
  const lost: string[] = [];
  const renewedAt: number[] = [];
  // W runs the job and renews every 500 ms (lockDuration 1000); it is never paused.
  const w = new Worker(
    'q',
    async (job, _token, signal) => {
      started.push(job.id as string);
      await waitFor(() => release || signal?.aborted, { what: 'release', timeoutMs: 30_000 });
      return 'ok';
    },
    { ...env, lockDuration: 1000, housekeeping: false },
  );
  w.on('error', () => undefined);
  w.on('lost', (job) => lost.push(job.id as string));
  t.after(async () => {
    const s = performance.now();
    await w.close();
    console.log('w closed in', performance.now() - s);
  });
  const job = await queue.add('j', {});
  await waitFor(() => started.length === 1, { what: 'started' });

  // L is the leader, connected through a proxy; it runs no job (the only one is W's).
  const proxy = await TcpProxy.start(env.connection.connectionString);
  t.after(async () => {
    const s = performance.now();
    await proxy.stop();
    console.log('proxy closed in', performance.now() - s);
  });
  const l = new Worker('q', async () => 'never', {
    ...env,
    connection: { ...env.connection, connectionString: proxy.connectionString },
    stalledInterval: 100,
  });
  const stalled: string[] = [];
  l.on('error', () => undefined);
  l.on('stalled', (id) => stalled.push(id));
  t.after(async () => {
    const s = performance.now();
    await l.close();
    console.log('l closed in', performance.now() - s);
  });
  await waitFor(() => l.isLeader, { what: 'L leads' });
  await new Promise((r) => setTimeout(r, 1500)); // L watched the claim renew for a while: no revocation
  assert.deepEqual(stalled, []);

  // Cut L's connection while its next claim read is in flight, for 1.5 s (the session survives).
  const session = (await l.client) as Session & { getData: Session['getData'] };
  const getData = session.getData.bind(session);
  let armed = true;
  session.getData = ((path: string, o?: Parameters<Session['getData']>[1]) => {
    if (armed && path.includes('/claims/')) {
      armed = false;
      const p = getData(path, o);
      proxy.cut();
      setTimeout(() => proxy.restore(), 1500);
      return p;
    }
    return getData(path, o);
  }) as Session['getData'];

  await waitFor(() => !armed, { what: 'cut' });
  await new Promise((r) => setTimeout(r, 4000));
  release = true;
  await waitFor(async () => (await queue.getJobState(job.id as string)) === 'completed', { what: 'completed' });
  console.log({ started, lost, stalled, renewedAt: renewedAt.length }, 'at', performance.now() - t0);
  t.after(() => console.log('after hooks start', performance.now() - t0));
  assert.deepEqual(stalled, [], 'the leader revoked a claim renewed every 500 ms');
  assert.deepEqual(lost, []);
  assert.equal(started.length, 1);
});
