import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GroupMembership, MemberExistsError } from '@zkq/core';
import { expire, sessionsOn } from '../../fixtures/recipes/helpers.js';
import { waitFor } from '../../helpers/zk.js';

test('membership: members follow joins and leaves', async (t) => {
  const { sessions } = await sessionsOn(t, 2);
  const a = new GroupMembership(sessions[0]!, '/group', { id: 'a', data: Buffer.from('A') });
  const b = new GroupMembership(sessions[1]!, '/group', { id: 'b', data: Buffer.from('B') });
  const changes: string[][] = [];
  a.on('change', (members) => changes.push(members));
  await a.join();
  assert.deepEqual(a.current, ['a']);
  await b.join();
  await waitFor(() => a.current.length === 2, { what: 'a sees b' });
  assert.deepEqual(a.current, ['a', 'b']);
  assert.deepEqual(
    (await a.members()).map((m) => [m.id, m.data.toString()]),
    [
      ['a', 'A'],
      ['b', 'B'],
    ],
  );
  await b.leave();
  await waitFor(() => a.current.length === 1, { what: 'a sees b leave' });
  assert.deepEqual(changes, [['a'], ['a', 'b'], ['a']]);

  const impostor = new GroupMembership(sessions[1]!, '/group', { id: 'a' });
  await assert.rejects(impostor.join(), MemberExistsError);
});

test('membership: a member re-joins after its session expires', async (t) => {
  const { sessions } = await sessionsOn(t, 2);
  const a = new GroupMembership(sessions[0]!, '/group', { id: 'a' });
  const b = new GroupMembership(sessions[1]!, '/group', { id: 'b' });
  await a.join();
  await b.join();
  await waitFor(() => b.current.length === 2, { what: 'b sees a' });
  const bSawLeave = new Promise<void>((resolve) => {
    b.on('change', (m) => m.length === 1 && resolve());
  });
  await expire(sessions[0]!);
  await bSawLeave;
  await waitFor(() => b.current.length === 2, { what: 'a back in the group', timeoutMs: 30_000 });
  const stat = await sessions[1]!.exists('/group/a');
  assert.equal(BigInt(`0x${stat!.ephemeralOwner}`), BigInt(`0x${sessions[0]!.sessionId}`));
  // a's own view is live again on its new session.
  const c = new GroupMembership(sessions[1]!, '/group', { id: 'c' });
  await c.join();
  await waitFor(() => a.current.includes('c'), { what: 'a sees c after its expiry' });
});
