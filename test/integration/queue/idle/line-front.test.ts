/**
 * Who stands right behind the first idle worker knows it without polling:
 * a worker third in line watches its predecessor and the first, so when
 * the first leaves (it took work) it is told, and stands `next`, a backup
 * for the new first. Before, it watched its predecessor only, and found out
 * at its next idle poll. On the line itself (IdleLine), three sessions, no
 * poll anywhere.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Session } from '@zkq/core';
import { IdleLine, openSession, QueueStore } from '@zkq/core/internal';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

test('the third idle worker is told when the first leaves, and stands right behind the new first', async (t) => {
  const env = await queueEnv(t);
  const lines: IdleLine[] = [];
  for (let i = 0; i < 3; i++) {
    const session: Session = await openSession(env.connection, env.prefix);
    t.after(() => session.close());
    const store = new QueueStore(session, 'line-front');
    await store.init();
    lines.push(new IdleLine(store));
  }
  const [first, second, third] = lines as [IdleLine, IdleLine, IdleLine];
  const told: string[] = [];
  assert.equal(await first.position(() => told.push('first')), 'head');
  assert.equal(await second.position(() => told.push('second')), 'next');
  assert.equal(await third.position(() => told.push('third')), 'waiting');

  first.leave(); // as it does once it has claimed work
  await waitFor(() => told.includes('second') && told.includes('third'), { what: 'the two behind the first told' });
  assert.equal(await second.position(() => undefined), 'head');
  assert.equal(await third.position(() => told.push('third again')), 'next');

  // and it still watches its predecessor, the new first: told again when that one leaves
  second.leave();
  await waitFor(() => told.includes('third again'), { what: 'the third told again' });
  assert.equal(await third.position(() => undefined), 'head');
});
