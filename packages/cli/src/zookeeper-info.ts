/**
 * What a ZooKeeper server says about itself through its four-letter words
 * (`srvr`, `mntr`): version, mode, uptime, connections, znode count, and
 * the mode of every member of the ensemble. The
 * server must allow them (`4lw.commands.whitelist`); one that does not, or
 * cannot be reached, gives `undefined`, never an error, since this only
 * decorates what the dashboard shows.
 */
import { connect } from 'node:net';

export const FOUR_LETTER_TIMEOUT_MS = 2000;

/** The figures the dashboard shows, from `mntr` (with `srvr` for what older servers lack). */
export interface ZooKeeperServerInfo {
  /** `host:port` that answered. */
  server: string;
  version: string;
  /** standalone, leader, follower, observer. */
  mode: string;
  uptimeMs: number | undefined;
  connections: number;
  outstandingRequests: number;
  znodeCount: number;
  watchCount: number | undefined;
  ephemeralsCount: number | undefined;
  approximateDataSize: number | undefined;
  avgLatencyMs: number | undefined;
  maxLatencyMs: number | undefined;
  /** Every `mntr` figure as the server gave it. */
  mntr: Record<string, string>;
  /** Every server of the connection string and its mode (`unreachable` when it did not answer). */
  members: EnsembleMember[];
}

/** A server of the ensemble as the dashboard saw it. */
export interface EnsembleMember {
  server: string;
  /** standalone, leader, follower, observer, or unreachable (down, or four-letter words not allowed). */
  mode: string;
}

/** Each server's mode, asked of every server at once (`srvr`). */
export async function ensembleMembers(connectionString: string): Promise<EnsembleMember[]> {
  return Promise.all(
    serversOf(connectionString).map(async ({ host, port }) => {
      const server = `${host}:${port}`;
      try {
        const mode = parseSrvr(await fourLetterWord(host, port, 'srvr')).Mode;
        return { server, mode: mode ?? 'unreachable' };
      } catch {
        return { server, mode: 'unreachable' };
      }
    }),
  );
}

/** Sends `word` to `host:port` and resolves with the reply (empty when the server refuses the word). */
export function fourLetterWord(
  host: string,
  port: number,
  word: string,
  timeoutMs = FOUR_LETTER_TIMEOUT_MS,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const sock = connect({ host, port });
    sock.setTimeout(timeoutMs, () => sock.destroy(new Error(`${word}: no reply within ${timeoutMs} ms`)));
    sock.on('connect', () => sock.end(word));
    sock.on('data', (c) => chunks.push(c));
    sock.on('error', reject);
    sock.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

/** `key<TAB>value` lines of `mntr`. */
export function parseMntr(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const tab = line.indexOf('\t');
    if (tab > 0) out[line.slice(0, tab).trim()] = line.slice(tab + 1).trim();
  }
  return out;
}

/** `Key: value` lines of `srvr`. */
export function parseSrvr(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) out[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  return out;
}

/** The servers of a connection string, `host:port[,host:port...][/chroot]`. */
export function serversOf(connectionString: string): { host: string; port: number }[] {
  const hosts = connectionString.split('/')[0] ?? '';
  return hosts
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      const m = /^\[?([^\]]+?)\]?(?::(\d+))?$/.exec(s);
      return { host: m?.[1] ?? s, port: Number(m?.[2] ?? 2181) };
    });
}

const num = (v: string | undefined): number | undefined => {
  if (v === undefined) return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : undefined;
};

/** The figures of the first server of `connectionString` that answers, with every member's mode; or undefined. */
export async function zooKeeperInfo(connectionString: string): Promise<ZooKeeperServerInfo | undefined> {
  const members = ensembleMembers(connectionString);
  for (const { host, port } of serversOf(connectionString)) {
    try {
      const [mntrText, srvrText] = await Promise.all([
        fourLetterWord(host, port, 'mntr'),
        fourLetterWord(host, port, 'srvr'),
      ]);
      const mntr = parseMntr(mntrText);
      const srvr = parseSrvr(srvrText);
      const version = mntr.zk_version ?? srvr['Zookeeper version'];
      if (!version) continue; // four-letter words not allowed on this server
      const latency = (srvr['Latency min/avg/max'] ?? '').split('/').map(Number);
      return {
        server: `${host}:${port}`,
        version: version.split(',')[0]?.replace(/-\$\{[^}]*\}$/, '') ?? version,
        mode: mntr.zk_server_state ?? srvr.Mode ?? 'unknown',
        uptimeMs: num(mntr.zk_uptime),
        connections: num(mntr.zk_num_alive_connections) ?? num(srvr.Connections) ?? 0,
        // the server's counter dips below zero for a moment under load (its own accounting): none then
        outstandingRequests: Math.max(0, num(mntr.zk_outstanding_requests) ?? num(srvr.Outstanding) ?? 0),
        znodeCount: num(mntr.zk_znode_count) ?? num(srvr['Node count']) ?? 0,
        watchCount: num(mntr.zk_watch_count),
        ephemeralsCount: num(mntr.zk_ephemerals_count),
        approximateDataSize: num(mntr.zk_approximate_data_size),
        avgLatencyMs: num(mntr.zk_avg_latency) ?? latency[1],
        maxLatencyMs: num(mntr.zk_max_latency) ?? latency[2],
        mntr,
        members: await members,
      };
    } catch {
      // unreachable: try the next server
    }
  }
  return undefined;
}
