import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Session } from '@zkq/core';
import { QueueLayout } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../helpers/queue.js';
import { waitFor } from '../../helpers/zk.js';

test('experiment: obliterated by another queue object', async (t) => {
  const env = await queueEnv(t);
  const writer = new Queue('grace2', env);
  t.after(() => writer.close());
  const other = new Queue('grace2', env);
  t.after(() => other.close());
  const layout = new QueueLayout('grace2');
  const listener = await Session.connect({ connectionString: env.connection.connectionString, namespace: `/${env.prefix}` });
  t.after(() => listener.close());
  const logged = async (id: string) => {
    const names = await listener.getChildren(layout.eventLog).catch(() => [] as string[]);
    const bodies = await Promise.all(names.map(async (n) => (await listener.getData(`${layout.eventLog}/${n}`)).data));
    return bodies.map(String).some((b) => b.includes(`"jobId":"${id}"`));
  };
  await writer.add('first', 0);
  await listener.create(`${layout.eventListeners}/by-hand`, undefined, 'ephemeral');
  await waitFor(async () => logged((await writer.add('probe', 0)).id), { what: 'logged', intervalMs: 100 });
  await other.obliterate();
  const t0 = performance.now();
  let n = 0;
  for (;;) {
    let id: string;
    try {
      id = (await writer.add('after', 0, { jobId: `after-${n++}` })).id;
    } catch (err) {
      console.log('add failed', (err as Error).name, (err as Error).message, performance.now() - t0);
      await new Promise((r) => setTimeout(r, 500));
      if (performance.now() - t0 > 15000) break;
      continue;
    }
    const l = await logged(id);
    console.log('add', id, 'logged', l, Math.round(performance.now() - t0), 'listeners dir', !!(await listener.exists(layout.eventListeners)), 'meta', !!(await listener.exists(layout.meta)));
    if (performance.now() - t0 > 12000) break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  assert.ok(true);
});
