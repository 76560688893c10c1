/**
 * bull-board over zkq's queues: BullMQ's own `Queue` on the ZooKeeper
 * backend, shown by bull-board's `BullMQAdapter` as it is. Where bull-board
 * would ask Redis about itself, a subclass of the adapter answers with
 * ZooKeeper's figures (`mntr`/`srvr`), the queue's leader and its live
 * workers; `<base>/zookeeper.json` gives all of them, linked from the board.
 * Used by `zkq dashboard` and mountable in any Express app.
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { createZooKeeperBackend, type ZooKeeperConnectionOptions } from '@zkq/bullmq';
import { DEFAULT_PREFIX, openSession, type Session } from '@zkq/core';
import { type Queue, withBackend } from 'bullmq';
import express, { type Router } from 'express';
import { currentLeader, liveWorkers, type WorkerInfo } from './commands/inspect.js';
import { queueNamesIn } from './reader.js';
import { type ZooKeeperServerInfo, zooKeeperInfo } from './zookeeper-info.js';

/** How often the board looks for new queues when it shows every queue. */
export const DEFAULT_DISCOVERY_MS = 10_000;
/** How long ZooKeeper's figures are reused between polls (one `mntr` for many queues). */
const FACTS_TTL_MS = 2000;

export interface ZooKeeperDashboardOptions {
  /** As for BullMQ's classes on the ZooKeeper backend; `namespace` defaults to `zkq`. */
  connection: ZooKeeperConnectionOptions;
  /** The queues to show; default: every queue under the namespace, including ones made later. */
  queues?: string[];
  /** The path the router is mounted at (bull-board's pages link from there). Default `/`. */
  basePath?: string;
  /** No retry, remove, pause...: a board to look at only. */
  readOnly?: boolean;
  /** How often to look for new queues, ms (only without `queues`). */
  discoveryMs?: number;
}

export interface ZooKeeperDashboard {
  /** Mount it at `basePath`: `app.use(basePath, dashboard.router)`. */
  router: Router;
  /** The queues shown now. */
  queues(): string[];
  /** Stops looking for queues and closes every Queue and the session. */
  close(): Promise<void>;
}

/** What the board shows about ZooKeeper, fetched at most once per FACTS_TTL_MS. */
export class ZooKeeperFacts {
  private serverInfo: { at: number; value: Promise<ZooKeeperServerInfo | undefined> } | undefined;

  constructor(
    readonly connectionString: string,
    readonly session: Session,
  ) {}

  server(): Promise<ZooKeeperServerInfo | undefined> {
    const now = Date.now();
    if (!this.serverInfo || now - this.serverInfo.at > FACTS_TTL_MS) {
      this.serverInfo = { at: now, value: zooKeeperInfo(this.connectionString) };
    }
    return this.serverInfo.value;
  }

  async queue(name: string): Promise<{ leader: string | undefined; workers: WorkerInfo[] }> {
    const [leader, workers] = await Promise.all([currentLeader(this.session, name), liveWorkers(this.session, name)]);
    return { leader, workers };
  }
}

/**
 * BullMQAdapter for a queue on ZooKeeper: bull-board's "Redis details" show
 * ZooKeeper's, its workers list is zkq's live workers, and the queue's
 * description names its leader, its workers and the server's znode count.
 */
export class ZooKeeperBullMQAdapter extends BullMQAdapter {
  private zkDescription = '';

  constructor(
    queue: Queue,
    private readonly facts: ZooKeeperFacts,
    options: { readOnlyMode?: boolean } = {},
  ) {
    super(queue, { readOnlyMode: options.readOnlyMode ?? false, allowRetries: true });
  }

  override async getRedisInfo(): Promise<string | null> {
    return null; // not Redis: bull-board then asks getDatastoreStats
  }

  override async getDatastoreStats(): Promise<Awaited<ReturnType<BullMQAdapter['getDatastoreStats']>>> {
    const info = await this.facts.server();
    if (!info) return null;
    // bull-board's fields are Redis's: `os` carries where the server is and its znodes,
    // `blocked` its outstanding requests; no memory (ZooKeeper reports no JVM figures in mntr).
    return {
      version: `ZooKeeper ${info.version}`,
      mode: info.mode === 'standalone' ? 'standalone' : 'cluster',
      port: Number(info.server.split(':').pop()),
      os: `${info.mode} at ${info.server}, ${info.znodeCount} znodes, ${info.watchCount ?? '?'} watches`,
      uptime: Math.round((info.uptimeMs ?? 0) / 1000),
      clients: { connected: info.connections, blocked: info.outstandingRequests },
    };
  }

  override async getWorkers(): Promise<Awaited<ReturnType<BullMQAdapter['getWorkers']>>> {
    const { workers } = await this.facts.queue(this.getQueueName());
    const now = Date.now();
    return workers.map((w) => ({
      id: w.id,
      name: w.id,
      addr: `${w.host ?? '?'}${w.pid !== undefined ? ` pid ${w.pid}` : ''}`,
      age: w.startedAt ? Math.max(0, Math.round((now - w.startedAt) / 1000)) : 0,
    }));
  }

  /** Counts, and the description refreshed with them (bull-board reads it right after). */
  override async getJobCounts(): Promise<Awaited<ReturnType<BullMQAdapter['getJobCounts']>>> {
    const [counts] = await Promise.all([super.getJobCounts(), this.refreshDescription()]);
    return counts;
  }

  override getDescription(): string {
    return this.zkDescription;
  }

  private async refreshDescription(): Promise<void> {
    try {
      const [{ leader, workers }, server] = await Promise.all([
        this.facts.queue(this.getQueueName()),
        this.facts.server(),
      ]);
      const n = workers.length;
      this.zkDescription = [
        `leader: ${leader ?? 'none'}`,
        `${n} live worker${n === 1 ? '' : 's'}`,
        server
          ? `ZooKeeper ${server.version} ${server.mode}, ${server.znodeCount} znodes`
          : 'ZooKeeper figures unavailable',
      ].join(' · ');
    } catch {
      // keep the last description: the counts still show
    }
  }
}

/** Builds the board. Resolves once the queues are listed; mount `router` at `basePath`. */
export async function createZooKeeperDashboard(opts: ZooKeeperDashboardOptions): Promise<ZooKeeperDashboard> {
  const { namespace, ...connection } = opts.connection;
  const prefix = (namespace ?? DEFAULT_PREFIX).replace(/^\/+/, '') || DEFAULT_PREFIX;
  const basePath = `/${(opts.basePath ?? '/').replace(/^\/+|\/+$/g, '')}`;
  const session = await openSession(connection, prefix);
  const facts = new ZooKeeperFacts(connection.connectionString, session);
  const { Queue: ZkQueue } = withBackend(createZooKeeperBackend);
  const open = new Map<string, { queue: Queue; adapter: ZooKeeperBullMQAdapter }>();

  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(basePath === '/' ? '' : basePath);
  const board = createBullBoard({
    queues: [],
    serverAdapter,
    options: {
      uiConfig: {
        boardTitle: 'zkq',
        miscLinks: [{ text: 'ZooKeeper', url: `${basePath === '/' ? '' : basePath}/zookeeper.json` }],
      },
    },
  });

  const add = (name: string) => {
    if (open.has(name)) return;
    const queue = new ZkQueue(name, { connection: { ...connection, namespace: prefix } }) as unknown as Queue;
    const adapter = new ZooKeeperBullMQAdapter(queue, facts, { readOnlyMode: opts.readOnly ?? false });
    open.set(name, { queue, adapter });
    board.addQueue(adapter);
  };
  const discover = async () => {
    for (const name of await queueNamesIn(session)) add(name);
  };

  if (opts.queues) for (const name of opts.queues) add(name);
  else await discover();
  const timer = opts.queues
    ? undefined
    : setInterval(() => void discover().catch(() => {}), opts.discoveryMs ?? DEFAULT_DISCOVERY_MS);
  timer?.unref();

  const router = express.Router();
  router.get('/zookeeper.json', async (_req, res, next) => {
    try {
      const server = await facts.server();
      const queues = await Promise.all(
        [...open.keys()].sort().map(async (name) => ({ queue: name, ...(await facts.queue(name)) })),
      );
      res.json({ namespace: prefix, server: server ?? null, queues });
    } catch (err) {
      next(err);
    }
  });
  router.use(serverAdapter.getRouter());

  return {
    router,
    queues: () => [...open.keys()].sort(),
    async close() {
      if (timer) clearInterval(timer);
      await Promise.allSettled([...open.values()].map(({ queue }) => queue.close()));
      open.clear();
      await session.close();
    },
  };
}
