/**
 * After a collision a worker spreads its claims: it takes a window at a
 * random offset of a longer view of the head, so that workers stop racing
 * for the same first jobs. The window stays inside the first lane of the
 * view: spreading never serves a lower priority while a higher one waits.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Session } from '@zkq/core';
import { JobSource, QueueStore } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';
import { prefixSession } from '../../../helpers/znodes.js';

const HIGH = 40;
const LOW = 400;

test('spreading after a collision still takes the highest priority first', async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('spread', env);
  t.after(() => queue.close());
  await queue.addBulk(Array.from({ length: LOW }, (_, i) => ({ name: 'low', data: i, opts: { priority: 9 } })));
  await queue.addBulk(Array.from({ length: HIGH }, (_, i) => ({ name: 'high', data: i, opts: { priority: 1 } })));
  const [sa, sb] = await Promise.all([prefixSession(t, env), prefixSession(t, env)]);
  const source = async (session: Session, workerId: string) => {
    const store = new QueueStore(session, 'spread');
    await store.init();
    return new JobSource(store, () => [], { workerId, lockDuration: 600_000, idlePollMs: 1000, onWarning: () => {} });
  };
  const a = await source(sa, 'a');
  const b = await source(sb, 'b');

  // b takes the first jobs right before a's claim of the same ones is sent: a collides
  const multi = sa.multi.bind(sa);
  let staged = false;
  sa.multi = (async (ops: Parameters<typeof multi>[0]) => {
    if (!staged) {
      staged = true;
      const taken = await b.take(10);
      assert.ok(Array.isArray(taken) && taken.length === 10, 'b takes ten');
    }
    return multi(ops);
  }) as typeof sa.multi;
  const first = await a.take(10);
  assert.ok(Array.isArray(first), 'a takes');
  assert.equal(first.length, 0, 'every job a picked was taken by b: a collision');

  const names: string[] = [];
  for (let round = 0; round < 3; round++) {
    const taken = await a.take(10);
    assert.ok(Array.isArray(taken), 'a takes again');
    names.push(...taken.map((c) => c.record.name));
  }
  assert.equal(names.length, 30);
  assert.deepEqual(
    names.filter((n) => n !== 'high'),
    [],
    'only high-priority jobs while they wait',
  );
});
