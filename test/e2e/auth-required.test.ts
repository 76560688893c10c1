/**
 * The CLI against a ZooKeeper that enforces SASL authentication, without
 * credentials: one line and exit 4 (not authorized), not a crash of the
 * wire client ("Unknown code: -124") with its stack trace.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeError, EXIT } from '@zkq/cli';
import { AuthRequiredError, QuotaExceededError, ThrottledError, ZooKeeperError } from '@zkq/core';
import { saslServerOptions, startZooKeeper, type ZooKeeperServer } from '@zkq/testing';
import { zkq } from './cli.js';

let server: ZooKeeperServer;
before(async () => {
  server = await startZooKeeper({ heapMb: 128, ...saslServerOptions({ users: { alice: 'secret' } }) });
});
after(() => server?.stop());

test('a command without SASL credentials: one line, exit 4', async () => {
  for (const args of [
    ['add', 'q', 'job'],
    ['stats', 'q'],
  ]) {
    const r = await zkq([...args, `--zk=${server.connectionString}`, '--connect-timeout=10000']);
    assert.equal(r.code, EXIT.NOT_AUTHORIZED, `${args[0]}: ${r.stderr}`);
    const lines = r.stderr.split('\n').filter(Boolean);
    assert.deepEqual(lines, ['zkq: ZooKeeper requires SASL authentication, refused or not given (check --sasl)']);
  }
});

test('the other codes a later server may send: one line, exit 1', () => {
  assert.equal(describeError(new AuthRequiredError()).exitCode, EXIT.NOT_AUTHORIZED);
  for (const err of [
    new QuotaExceededError('/q'),
    new ThrottledError('/q'),
    new ZooKeeperError('ZK_ERROR', -999, 'ZooKeeper error -999'),
  ]) {
    const { message, exitCode } = describeError(err);
    assert.equal(exitCode, EXIT.FAILURE, err.code);
    assert.equal(message.includes('\n'), false);
    assert.match(message, err.code === 'ZK_ERROR' ? /-999/ : /\/q/);
  }
});
