/**
 * The CLI against hardened ZooKeepers: TLS only (--tls-ca, or $ZKQ_TLS_CA),
 * TLS requiring a client certificate (--tls-cert, --tls-key) and SASL
 * enforced (--sasl, or $ZKQ_SASL): a job is added and counted. A certificate
 * the client cannot trust, a missing client certificate and a wrong SASL
 * password each end the command at once with one line and exit 4.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  makeTestCertificates,
  saslServerOptions,
  startZooKeeper,
  type TestCertificates,
  uniqueRoot,
  type ZooKeeperServer,
} from '@zkq/testing';
import { zkq } from './cli.js';

let certs: TestCertificates;
before(() => {
  certs = makeTestCertificates();
});

function oneLine(stderr: string): string {
  const lines = stderr.split('\n').filter(Boolean);
  assert.equal(lines.length, 1, `one line, got:\n${stderr}`);
  return lines[0] as string;
}

async function addAndCount(zk: string, flags: string[], env: NodeJS.ProcessEnv = {}): Promise<void> {
  const global = [`--zk=${zk}`, `--namespace=${uniqueRoot('cli-secure').slice(1)}`, '--connect-timeout=15000'];
  const added = await zkq(['add', 'mail', 'send', ...global, ...flags], { env });
  assert.equal(added.code, 0, added.stderr);
  const stats = await zkq(['stats', 'mail', '--json', ...global, ...flags], { env });
  assert.equal(stats.code, 0, stats.stderr);
  assert.equal(JSON.parse(stats.stdout).counts.waiting, 1, stats.stdout);
}

describe('TLS only', () => {
  let server: ZooKeeperServer;
  before(async () => {
    server = await startZooKeeper({ heapMb: 128, tls: { certificates: certs, clientAuth: 'none' } });
  });
  after(() => server?.stop());

  test('--tls-ca, or $ZKQ_TLS_CA: a job added and counted', async () => {
    await addAndCount(server.connectionString, [`--tls-ca=${certs.ca}`]);
    await addAndCount(server.connectionString, [], { ZKQ_TLS_CA: certs.ca });
  });

  test('a CA that did not sign the server certificate: one line, exit 4', async () => {
    const r = await zkq(['stats', 'mail', `--zk=${server.connectionString}`, `--tls-ca=${certs.otherCa}`]);
    assert.equal(r.code, 4, r.stderr);
    assert.match(
      oneLine(r.stderr),
      /^zkq: secure connection to ZooKeeper failed: .* \(check --tls-ca, --tls-cert and --tls-key\)$/,
    );
  });

  test('a CA file that does not exist: usage error', async () => {
    const r = await zkq(['stats', 'mail', `--zk=${server.connectionString}`, '--tls-ca=no-such-ca.pem']);
    assert.equal(r.code, 2, r.stderr);
    assert.equal(oneLine(r.stderr), 'zkq: --tls-ca: cannot read no-such-ca.pem: no such file');
  });
});

describe('TLS with client certificates', () => {
  let server: ZooKeeperServer;
  before(async () => {
    server = await startZooKeeper({ heapMb: 128, tls: { certificates: certs, clientAuth: 'need' } });
  });
  after(() => server?.stop());

  test('--tls-cert and --tls-key: a job added and counted', async () => {
    await addAndCount(server.connectionString, [
      `--tls-ca=${certs.ca}`,
      `--tls-cert=${certs.client.cert}`,
      `--tls-key=${certs.client.key}`,
      '--acl=creator',
    ]);
  });

  test('no client certificate: one line, exit 4', async () => {
    const r = await zkq(['stats', 'mail', `--zk=${server.connectionString}`, `--tls-ca=${certs.ca}`]);
    assert.equal(r.code, 4, r.stderr);
    assert.match(oneLine(r.stderr), /^zkq: secure connection to ZooKeeper failed/);
  });
});

describe('SASL enforced', () => {
  let server: ZooKeeperServer;
  before(async () => {
    server = await startZooKeeper({ heapMb: 128, ...saslServerOptions({ users: { ops: 'opsPass' } }) });
  });
  after(() => server?.stop());

  test('--sasl, or $ZKQ_SASL: a job added and counted', async () => {
    await addAndCount(server.connectionString, ['--sasl=ops:opsPass']);
    await addAndCount(server.connectionString, [], { ZKQ_SASL: 'ops:opsPass' });
  });

  test('a wrong password: one line, exit 4', async () => {
    const r = await zkq(['stats', 'mail', `--zk=${server.connectionString}`, '--sasl=ops:wrong']);
    assert.equal(r.code, 4, r.stderr);
    assert.equal(oneLine(r.stderr), 'zkq: ZooKeeper requires SASL authentication, refused or not given (check --sasl)');
  });
});
