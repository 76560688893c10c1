/**
 * After an obliterate, the writer that makes the queue again keeps logging
 * events for the listeners it saw (events.ts, LISTENER_RETURN_MS) while they
 * register again; when they do not come back, it stops: a queue nobody
 * listens to logs nothing for long.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Session } from '@zkq/core';
import { QueueLayout } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

test('after obliterate, a writer whose listeners do not come back logs the first adds, then stops', async (t) => {
  const env = await queueEnv(t);
  const name = 'listener-return';
  const queue = new Queue(name, env);
  t.after(() => queue.close());
  const layout = new QueueLayout(name);
  const listener = await Session.connect({
    connectionString: env.connection.connectionString,
    namespace: `/${env.prefix}`,
  });
  t.after(() => listener.close());
  const logged = async (id: string): Promise<boolean> => {
    const names = await listener.getChildren(layout.eventLog).catch(() => [] as string[]);
    const bodies = await Promise.all(names.map(async (n) => (await listener.getData(`${layout.eventLog}/${n}`)).data));
    return bodies.some((body) => String(body).includes(`"jobId":"${id}"`));
  };
  await queue.add('first', 0); // the queue exists
  // a listener registers by hand, and stays away once the obliterate took its node
  await listener.create(`${layout.eventListeners}/by-hand`, undefined, 'ephemeral');
  await waitFor(async () => logged((await queue.add('probe', 0)).id), {
    what: 'the queue to log events for the listener',
    intervalMs: 100,
  });
  await queue.obliterate();
  assert.ok(await logged((await queue.add('after', 0)).id), 'the first add of the queue made again is logged');
  // nobody registers again: the writer stops logging once the listeners' time to come back is over
  await waitFor(async () => !(await logged((await queue.add('probe', 0)).id)), {
    what: 'the writer to stop logging',
    intervalMs: 250,
    timeoutMs: 30_000,
  });
  const left = await listener.getChildren(layout.eventLog);
  const late = await queue.addBulk(Array.from({ length: 3 }, (_, n) => ({ name: 'late', data: n })));
  for (const job of late) assert.equal(await logged(job.id as string), false, `job ${job.id} not logged`);
  assert.deepEqual((await listener.getChildren(layout.eventLog)).sort(), left.sort(), 'no event node written since');
});
