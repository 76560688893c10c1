import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CREATOR_ACL, digestId, OPEN_ACL } from '@zkq/core';
import { permissionBits } from '@zkq/core/internal';

test('permissionBits: ZooKeeper bit values and their unions', () => {
  assert.equal(permissionBits('r'), 1);
  assert.equal(permissionBits('w'), 2);
  assert.equal(permissionBits('c'), 4);
  assert.equal(permissionBits('d'), 8);
  assert.equal(permissionBits('a'), 16);
  assert.equal(permissionBits('rwcda'), 31);
  assert.equal(permissionBits('adcwr'), 31);
  assert.equal(permissionBits('rr'), 1);
  assert.equal(permissionBits(''), 0);
});

test('permissionBits: an unknown letter is a TypeError naming it', () => {
  assert.throws(
    () => permissionBits('rx'),
    (err: unknown) => err instanceof TypeError && /'x'/.test(err.message),
  );
  assert.throws(() => permissionBits('R'), TypeError);
});

test('digestId: user:base64(sha1(user:password)), as ZooKeeper computes it', () => {
  // Reference: printf 'alice:secret' | openssl sha1 -binary | base64
  assert.equal(digestId('alice', 'secret'), 'alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=');
  assert.notEqual(digestId('alice', 'secret'), digestId('alice', 'Secret'));
  assert.ok(digestId('bob', 'pw').startsWith('bob:'));
});

test('predefined ACLs: open is world:anyone, creator is auth with every permission', () => {
  assert.deepEqual(OPEN_ACL, [{ perms: 'rwcda', scheme: 'world', id: 'anyone' }]);
  assert.deepEqual(CREATOR_ACL, [{ perms: 'rwcda', scheme: 'auth', id: '' }]);
});

test('x509Acl and saslAcl: every permission for one certificate subject or SASL user, or the ones given', async () => {
  const { saslAcl, x509Acl } = await import('@zkq/core');
  assert.deepEqual(x509Acl('CN=worker,O=tenant-a'), [{ perms: 'rwcda', scheme: 'x509', id: 'CN=worker,O=tenant-a' }]);
  assert.deepEqual(saslAcl('alice', 'r'), [{ perms: 'r', scheme: 'sasl', id: 'alice' }]);
});
