/**
 * `zkq dashboard` run by an identity that another tenant's namespace does not
 * admit: it starts, says why in its log, and answers every page and API
 * request with 403 and one line naming the namespace, no stack trace, no
 * queue of the owner's; the owner's own board on the same namespace shows
 * the queue.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type CliEnv, cliEnv, ZkqProcess, zkq } from './cli.js';

async function startDashboard(t: { after(fn: () => unknown): void }, env: CliEnv, auth: string) {
  const dashboard = new ZkqProcess(['dashboard', ...env.global, `--auth=${auth}`, '--port', '0']);
  t.after(() => dashboard.dispose());
  const line = await dashboard.waitForLine(/^dashboard is serving at http:\/\/127\.0\.0\.1:\d+\/ /, 60_000);
  return { dashboard, line, base: /(http:\S+)/.exec(line)?.[1] ?? '' };
}

test("a dashboard whose identity may not read the namespace: 403 and one clear line, the owner's board works", async (t) => {
  const env = await cliEnv(t);
  const added = await zkq(['add', 'mail', 'send', ...env.global, '--auth=tenant-a:pw-a']);
  assert.equal(added.code, 0, added.stderr);

  const { dashboard, line, base } = await startDashboard(t, env, 'tenant-b:pw-b');
  assert.match(line, new RegExp(`\\(0 queues under /${env.namespace}\\)$`));
  await dashboard.waitForLine(/not authorized: the ACL of \//, 10_000);
  const expected = new RegExp(
    `^not authorized: the ACL of /${env.namespace} does not let this dashboard's ZooKeeper identity list its queues \\(check the identity it connects with: digest auth, SASL user or TLS client certificate\\)$`,
  );
  for (const path of ['', 'api/queues', 'api/queues/mail/1', 'zookeeper.json']) {
    const res = await fetch(`${base}${path}`);
    assert.equal(res.status, 403, path);
    const body = await res.text();
    const message = path === '' ? body.trimEnd() : (JSON.parse(body) as { error: string }).error;
    assert.match(message, expected, path);
    assert.doesNotMatch(body, /\n\s+at |mail|send/, `${path}: no stack trace, nothing of the owner's`);
  }

  const owner = await startDashboard(t, env, 'tenant-a:pw-a');
  assert.match(owner.line, new RegExp(`\\(1 queue under /${env.namespace}\\)$`));
  const res = await fetch(`${owner.base}api/queues`);
  assert.equal(res.status, 200);
  const { queues } = (await res.json()) as { queues: { name: string }[] };
  assert.deepEqual(
    queues.map((q) => q.name),
    ['mail'],
  );
});
