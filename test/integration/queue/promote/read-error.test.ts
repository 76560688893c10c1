/**
 * A promoter that cannot read a due job's record (an error other than the
 * record being gone) leaves the job's delayed pointer where it is and tries
 * again: the job is promoted once the record reads, and the other due jobs
 * of that look are promoted by it. Here the server's replies to the
 * promoter's reads of one job's record carry an error, the first one or the
 * first three (a record unreadable for a while).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Housekeeper, openSession, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { FaultProxy, OP, request } from '../../../helpers/fault-proxy.js';
import { queueEnv } from '../../../helpers/queue.js';
import { nextEvent, waitFor } from '../../../helpers/zk.js';

for (const [code, times] of [
  [-125, 1],
  [-999, 5],
] as const) {
  test(`a due job whose record read fails (${code}, ${times}x) is promoted on a later look, not lost; the others at once`, async (t) => {
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

    const [job, other] = await queue.addBulk([
      { name: 'later', data: {}, opts: { delay: 500 } },
      { name: 'later', data: {}, opts: { delay: 500 } },
    ]);
    const faults = Array.from({ length: times }, () =>
      proxy.rewriteError(request(OP.multiRead, store.layout.job(job?.id as string)), code),
    );
    await faults[0]?.fired;
    // the look that could not read the first job moved the other (a look a record unreadable
    // for good would not hold every due job up)
    await waitFor(async () => (await queue.getJobState(other?.id as string)) === 'waiting', {
      timeoutMs: 15_000,
      what: 'the other job promoted',
    });
    if (times > 1) assert.ok(!faults[times - 1]?.hasFired, 'promoted while the record was still unreadable');
    await waitFor(async () => (await queue.getJobState(job?.id as string)) === 'waiting', {
      timeoutMs: 15_000,
      what: `job ${job?.id} promoted`,
    });
    assert.deepEqual(await queue.getDelayed(), [], 'no delayed job left');
  });
}
