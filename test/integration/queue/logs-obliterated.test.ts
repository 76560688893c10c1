/**
 * A log append into a queue another client obliterated (the writer's store
 * still thinks it made, its log shard known): it fails with NoNodeError and
 * makes nothing of the queue again. Its shard directory, made again, would
 * bring back the queue's root without `meta`: a queue nobody can use, that
 * adds would not set up again.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NoNodeError } from '@zkq/core';
import { obliterate, QueueStore, writeLogs } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../helpers/queue.js';
import { prefixSession } from '../../helpers/znodes.js';

for (const known of [true, false]) {
  test(`a log append into a queue obliterated elsewhere fails with NoNodeError, its shard ${known ? 'known' : 'not yet made'}`, async (t) => {
    const env = await queueEnv(t);
    const name = 'logs-gone';
    const queue = new Queue(name, env);
    t.after(() => queue.close());
    const job = await queue.add('logged', 0);
    const writer = new QueueStore(await prefixSession(t, env), name);
    await writer.init();
    const owner = { id: job.id, czxid: (await writer.session.getData(writer.layout.job(job.id))).stat.czxid };
    if (known) await writeLogs(writer, [{ owner, lines: ['before'] }]);
    await obliterate(new QueueStore(await prefixSession(t, env), name), { force: true });
    await assert.rejects(writeLogs(writer, [{ owner, lines: ['after'] }]), NoNodeError);
    assert.equal(await writer.session.exists(writer.layout.root), null, 'nothing of the queue made again');
  });
}
