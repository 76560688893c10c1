/**
 * A promoter that cannot read a due job's record (an error other than the
 * record being gone) leaves the job's delayed pointer where it is and tries
 * again: the job is promoted once the record reads. Here the server's reply
 * to the promoter's first read of the record carries an error.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Housekeeper, openSession, QueueStore } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { FaultProxy, OP, request } from '../../helpers/fault-proxy.js';
import { queueEnv } from '../../helpers/queue.js';
import { nextEvent, waitFor } from '../../helpers/zk.js';

for (const code of [-125, -999]) {
  test(`a due job whose record read fails (${code}) is promoted on a later look, not lost`, async (t) => {
    const env = await queueEnv(t);
    const proxy = await FaultProxy.start(env.connection.connectionString);
    t.after(() => proxy.stop());
    const queue = new Queue('promote-read', env);
    t.after(() => queue.close());
    const session = await openSession({ ...env.connection, connectionString: proxy.connectionString }, env.prefix);
    const store = new QueueStore(session, 'promote-read');
    await store.init();
    const keeper = new Housekeeper(store, 'promoter', 60_000);
    t.after(async () => {
      await keeper.close();
      await session.close();
    });
    keeper.on('error', () => undefined); // the failed look is reported; the next one promotes
    const elected = nextEvent(keeper, 'elected');
    await keeper.start();
    await elected;

    const job = await queue.add('later', {}, { delay: 500 });
    const fault = proxy.rewriteError(request(OP.getData, store.layout.job(job.id as string)), code);
    await fault.fired;
    await waitFor(async () => (await queue.getJobState(job.id as string)) === 'waiting', {
      timeoutMs: 15_000,
      what: `job ${job.id} promoted`,
    });
    assert.deepEqual(await queue.getDelayed(), [], 'no delayed job left');
  });
}
