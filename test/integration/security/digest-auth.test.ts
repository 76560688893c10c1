/** Digest auth and the ACL the session applies to every node it creates. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { digestId, NoAuthError } from '@zkq/core';
import { testSession } from '../../helpers/zk.js';

test('digest auth: creator ACL for alice; wrong password and anonymous get NoAuth; open nodes stay readable', async (t) => {
  const alice = await testSession(t, { auth: 'alice:secret' });
  const ns = alice.namespace;
  await alice.create('/private', Buffer.from('mine'));
  await alice.create('/private/kid');
  assert.equal((await alice.getData('/private')).data.toString(), 'mine');
  await alice.setData('/private', Buffer.from('still mine'));

  const again = await testSession(t, { auth: 'alice:secret', namespace: ns });
  assert.equal((await again.getData('/private')).data.toString(), 'still mine', 'same identity, other session');

  for (const auth of ['alice:wrong', 'mallory:secret', undefined]) {
    const other = await testSession(t, { namespace: ns, ...(auth ? { auth } : {}) });
    const noAuth = (err: unknown) => {
      assert.ok(err instanceof NoAuthError, `${auth}: ${String(err)}`);
      assert.equal(err.code, 'ZK_NO_AUTH');
      assert.equal(err.path, '/private');
      return true;
    };
    await assert.rejects(other.getData('/private'), noAuth);
    await assert.rejects(other.getChildren('/private'), noAuth);
    await assert.rejects(other.setData('/private', Buffer.from('x')), noAuth);
    await assert.rejects(
      other.create('/private/intruder'),
      (err: unknown) => err instanceof NoAuthError && err.path === '/private/intruder',
    );
    // exists needs no permission: the node is visible, its content is not.
    assert.ok(await other.exists('/private'));
  }

  // An explicit open ACL: everyone may read and write what alice makes.
  const openAlice = await testSession(t, { auth: 'alice:secret', acl: 'open' });
  await openAlice.create('/shared', Buffer.from('hello'));
  const anonymous = await testSession(t, { namespace: openAlice.namespace });
  assert.equal((await anonymous.getData('/shared')).data.toString(), 'hello');
  await anonymous.setData('/shared', Buffer.from('hi'));
});

test('explicit digest ACL entries: read-only for bob, everything for alice', async (t) => {
  const acl = [
    { perms: 'rwcda', scheme: 'digest' as const, id: digestId('alice', 'secret') },
    { perms: 'r', scheme: 'digest' as const, id: digestId('bob', 'pw') },
  ];
  const alice = await testSession(t, { auth: 'alice:secret', acl });
  await alice.create('/doc', Buffer.from('v1'));
  const bob = await testSession(t, { auth: 'bob:pw', namespace: alice.namespace });
  assert.equal((await bob.getData('/doc')).data.toString(), 'v1');
  await assert.rejects(bob.setData('/doc', Buffer.from('v2')), NoAuthError);
  await assert.rejects(bob.create('/doc/kid'), NoAuthError);
  const eve = await testSession(t, { auth: 'bob:wrong', namespace: alice.namespace });
  await assert.rejects(eve.getData('/doc'), NoAuthError);
});
