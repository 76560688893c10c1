/**
 * The dashboard's view of its namespace, creating nothing. Connecting a
 * session in a namespace creates the namespace's node, so a session at the
 * root asks first whether the node exists; the session in the namespace is
 * opened only once it does (and, once open, re-creates nothing on reconnect).
 * While the node is missing there are no queues.
 */
import { type ConnectionOptions, NoNodeError, Session } from '@zkq/core';
import { openSession, validatePrefix } from '@zkq/core/internal';
import { queueNamesIn } from './reader.js';

export class NamespaceReader {
  private root: Session | undefined;
  private inside: Promise<Session> | undefined;
  private readonly path: string;

  constructor(
    private readonly connection: ConnectionOptions,
    private readonly prefix: string,
  ) {
    this.path = validatePrefix(prefix);
  }

  /** Connects the session at the root. */
  async start(): Promise<void> {
    this.root = await Session.connect(this.connection);
  }

  /** The queues under the namespace, sorted, and the session they were listed by; undefined without the namespace. */
  async queues(): Promise<{ names: string[]; session: Session } | undefined> {
    const session = await this.open();
    if (!session) return undefined;
    try {
      return { names: await queueNamesIn(session), session };
    } catch (err) {
      if (err instanceof NoNodeError) return undefined; // the namespace was deleted meanwhile
      throw err;
    }
  }

  async close(): Promise<void> {
    const inside = await this.inside?.catch(() => undefined);
    await Promise.allSettled([this.root?.close(), inside?.close()]);
  }

  private async open(): Promise<Session | undefined> {
    if (!this.inside) {
      if (!this.root) throw new Error('NamespaceReader.start() was not called');
      if (!(await this.root.exists(this.path))) return undefined;
      this.inside ??= openSession(this.connection, this.prefix).catch((err) => {
        this.inside = undefined;
        throw err;
      });
    }
    return this.inside;
  }
}
