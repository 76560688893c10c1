/**
 * A renewal whose connection is lost again and again before it can learn
 * its outcome (a link flapping; an expiry by impersonation, which takes the
 * session from its client at every try) has learnt nothing about the lease:
 * the claim's token still holds, so the attempt goes on and the next renewal
 * proves it again. It was reported lost, and its processor aborted, once the
 * transaction's tries ran out.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { sharedZooKeeper } from '@zkq/testing';
import { Worker } from '@zkq/worker';
import { FaultProxy, OP, request } from '../../../helpers/fault-proxy.js';
import { queueEnv } from '../../../helpers/queue.js';
import { expire, waitFor } from '../../../helpers/zk.js';

/** More losses in a row than one transaction is sent again after an unknown outcome. */
const LOSSES = 12;

for (const expiry of [false, true]) {
  test(`a renewal cut off ${LOSSES} times in a row${expiry ? ' after a session expiry' : ''}: the attempts go on`, {
    timeout: 60_000,
  }, async (t) => {
    const env = await queueEnv(t);
    const proxy = await FaultProxy.start(await sharedZooKeeper());
    t.after(() => proxy.stop());
    const queue = new Queue('q', env);
    t.after(() => queue.close());
    const jobs = 3;
    let release = false;
    const started: string[] = [];
    const aborted: string[] = [];
    const lost: string[] = [];
    const completed: string[] = [];
    const worker = new Worker(
      'q',
      async (job, _token, signal) => {
        started.push(job.id as string);
        signal?.addEventListener('abort', () => aborted.push(job.id as string));
        await waitFor(() => release || signal?.aborted, { what: 'release', timeoutMs: 60_000 });
        return 'ok';
      },
      {
        ...env,
        connection: { ...env.connection, connectionString: proxy.connectionString },
        concurrency: jobs,
        lockDuration: 2000,
        housekeeping: false,
      },
    );
    worker.on('lost', (job) => lost.push(job.id as string));
    worker.on('completed', (job) => completed.push(job.id as string));
    t.after(() => worker.close());
    const added = await queue.addBulk(Array.from({ length: jobs }, (_, i) => ({ name: `j${i}`, data: {} })));
    await waitFor(() => started.length === jobs, { what: 'all started' });
    if (expiry) await expire(await worker.client);
    // every renewal (a multi naming the claims) is cut off before it reaches the server, LOSSES times
    const renewal = request(OP.multi, '/claims/');
    const faults = Array.from({ length: LOSSES }, () => proxy.cutBefore(renewal, 0));
    // (an attempt aborted on the way ends the wait: the renewals stop with it)
    await waitFor(() => faults.every((f) => f.hasFired) || aborted.length > 0, { what: 'the losses' });
    assert.deepEqual(aborted, [], 'no processor aborted by the losses');
    // a renewal after them goes through: every claim is there, rewritten since (or re-created)
    const session = await worker.client;
    const versions = async () =>
      Promise.all(added.map((j) => session.exists(`/q/claims/${j.id}`).then((s) => s?.version ?? -1)));
    const before = await versions();
    await waitFor(async () => (await versions()).every((v, i) => v >= 0 && v > (before[i] as number)), {
      what: 'every claim renewed after the losses',
      timeoutMs: 15_000,
    });
    release = true;
    await waitFor(() => completed.length + lost.length >= jobs, { what: 'settled', timeoutMs: 15_000 });
    const states = await Promise.all(added.map((j) => queue.getJobState(j.id as string)));
    assert.deepEqual(lost, [], `no attempt lost (states: ${states.join(', ')})`);
    assert.deepEqual(aborted, [], 'no processor aborted');
    assert.equal(completed.length, jobs);
  });
}
