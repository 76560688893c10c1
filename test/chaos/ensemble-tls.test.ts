/**
 * TLS across an ensemble's fail-over: a session knowing three TLS-only
 * servers keeps working while each member in turn is killed (SIGKILL) and
 * started again; every reconnection, to whichever member comes next, is
 * TLS (there is no plain port to fall back to), and the session survives.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isOutcomeUnknown, Session } from '@zkq/core';
import { makeTestCertificates, pem, startEnsemble } from '@zkq/testing';

/** Sets the node until it is known to be applied (a setData of the same value may safely run twice). */
async function setUntilApplied(session: Session, path: string, value: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await session.setData(path, Buffer.from(value));
      return;
    } catch (err) {
      if (!isOutcomeUnknown(err) || Date.now() > deadline) throw err;
    }
  }
}

test('a TLS session survives each member of a TLS-only ensemble being killed in turn', async (t) => {
  const certificates = makeTestCertificates();
  const ensemble = await startEnsemble({ heapMb: 128, tls: { certificates, clientAuth: 'none' } });
  t.after(() => ensemble.stop());
  const session = await Session.connect({
    connectionString: ensemble.connectionString,
    namespace: '/tls-failover',
    sessionTimeout: 20_000,
    tls: { ca: pem(certificates.ca) },
  });
  t.after(() => session.close());
  let reconnections = 0;
  let lost = 0;
  session.on('reconnected', () => reconnections++);
  session.on('lost', () => lost++);
  await session.create('/n', Buffer.from('start'));
  for (const [i, member] of ensemble.servers.entries()) {
    await member.stop();
    await setUntilApplied(session, '/n', `without ${i}`);
    assert.equal((await session.getData('/n')).data.toString(), `without ${i}`);
    member.start();
    await member.waitServing();
  }
  assert.ok(reconnections >= 1, 'the session moved to another member at least once');
  assert.equal(lost, 0, 'and kept its session');
});
