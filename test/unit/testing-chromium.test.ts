/**
 * How the browser tests get a Chromium on a fresh machine: found where it
 * is, installed with apt-get as root when missing, or a clear error saying
 * what to run. A scratch "machine" (a fake apt-get script and binary paths
 * in a temporary directory) stands in for Debian's.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ChromiumNotInstalledError, ensureChromium } from '@zkq/testing';

function scratch(t: { after: (fn: () => void) => void }, aptBody: string) {
  const dir = mkdtempSync(join(tmpdir(), 'zkq-chromium-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const binary = join(dir, 'chromium');
  const calls = join(dir, 'calls');
  const aptGet = join(dir, 'apt-get');
  writeFileSync(aptGet, `#!/bin/sh\necho "$@" >> ${calls}\n${aptBody.replaceAll('$BIN', binary)}\n`);
  chmodSync(aptGet, 0o755);
  const system = { candidates: [binary], aptGet, isRoot: true, env: {} };
  return { binary, system, calls: () => (existsSync(calls) ? readFileSync(calls, 'utf8').trim().split('\n') : []) };
}

test('a machine without Chromium, as root: apt-get installs it, and its path is returned', (t) => {
  const m = scratch(t, 'case "$1" in install) touch $BIN ;; esac');
  assert.equal(ensureChromium({ system: m.system }), m.binary);
  assert.deepEqual(m.calls(), ['update', 'install -y --no-install-recommends chromium']);
  // installed now: found at once, apt-get not run again
  assert.equal(ensureChromium({ system: m.system }), m.binary);
  assert.equal(m.calls().length, 2);
});

test('apt-get failing, not root, or install refused: ChromiumNotInstalledError saying what to run', (t) => {
  const failing = scratch(t, 'echo "E: Unable to locate package chromium" >&2; exit 100');
  assert.throws(
    () => ensureChromium({ system: failing.system }),
    (err: unknown) =>
      err instanceof ChromiumNotInstalledError &&
      err.code === 'ZKQ_CHROMIUM_NOT_INSTALLED' &&
      /Unable to locate package chromium/.test(err.message) &&
      /apt-get install -y chromium/.test(err.message),
  );
  const user = scratch(t, 'exit 0');
  assert.throws(
    () => ensureChromium({ system: { ...user.system, isRoot: false } }),
    /only as root on Debian\/Ubuntu\. Run: sudo apt-get update && sudo apt-get install -y chromium/,
  );
  assert.deepEqual(user.calls(), [], 'nothing run without root');
  assert.throws(() => ensureChromium({ install: false, system: user.system }), /Chromium is not installed\. Run:/);
  assert.throws(
    () => ensureChromium({ system: { ...user.system, env: { CHROMIUM_PATH: '/nowhere/chromium' } } }),
    /CHROMIUM_PATH=\/nowhere\/chromium does not exist/,
  );
});
