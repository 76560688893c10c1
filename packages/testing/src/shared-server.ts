/**
 * One ZooKeeper for a whole test run.
 *
 * The test runner starts a server once and hands its address to every test
 * file through `ZKQ_TEST_ZK`; each test then works under its own root path
 * (`uniqueRoot()`), so tests share the JVM and nothing else. A file run on
 * its own (no `ZKQ_TEST_ZK`) starts a private server. Tests that stop or
 * kill servers start their own with `startZooKeeper()`/`startEnsemble()`.
 */
import { randomBytes } from 'node:crypto';
import { startZooKeeper, type ZooKeeperServer } from './server.js';

export const SHARED_SERVER_ENV = 'ZKQ_TEST_ZK';

let own: Promise<ZooKeeperServer> | undefined;

/** Connection string of the run's shared server (started on first use when none is given). */
export async function sharedZooKeeper(): Promise<string> {
  const given = process.env[SHARED_SERVER_ENV];
  if (given) return given;
  if (!own) {
    // The private server lives as long as this process: unreferenced so that
    // it does not keep the process alive, and killed when the process exits.
    own = startZooKeeper().then((server) => {
      server.process.unref();
      return server;
    });
  }
  const server = await own;
  return server.connectionString;
}

/** A fresh, unique root path for one test, such as `/t-3f9a2c51`. */
export function uniqueRoot(label = 't'): string {
  const safe = label.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 40);
  return `/${safe}-${randomBytes(4).toString('hex')}`;
}
