import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Config } from '../config/schema.js';
import type { Logger } from '../log/logger.js';
import { MetricsRegistry } from '../metrics/registry.js';
import { DomainConnection } from './domain.js';
import { EventRecorder } from './events.js';
import { startHealthServer } from './health.js';
import { Informer, type InformerEvent } from './informer.js';
import { instanceScope } from './instance.js';
import { consumerGroupKind } from './kinds/consumer-group.js';
import { conveyorAccessKind } from './kinds/conveyor-access.js';
import type { KindHandler } from './kinds/kind.js';
import { topicConfigKind } from './kinds/topic-config.js';
import { topicSchemaKind } from './kinds/topic-schema.js';
import { loadCronJobTemplate } from './cronjob-template.js';
import { kubeClients, objectKey, type KubeObject } from './kube.js';
import { LeaderElector } from './leader-election.js';
import { ControllerMetrics } from './metrics.js';
import { OwnDeployment, type OwnPod } from './own-deployment.js';
import { ReaperCronJobSync } from './reaper-cronjob.js';
import { Reconciler } from './reconciler.js';
import { parseTopicOwnership } from './topic-ownership.js';
import { WorkQueue } from './work-queue.js';
import { describeDb, type DbDescription } from '../store/db.js';
import { VERSION } from '../version.js';

const KINDS: KindHandler[] = [topicConfigKind, topicSchemaKind, consumerGroupKind, conveyorAccessKind];
const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

export interface ControllerOptions {
  logger: Logger;
  /** Tests point the controller at a fake API server; otherwise in-cluster or KUBECONFIG. */
  kubeConfig?: KubeConfig;
  identity?: string;
  /** Its own pod (the owner of what it creates is that pod's Deployment); default: POD_NAME and POD_NAMESPACE. */
  pod?: OwnPod;
}

export interface RunningController {
  port: number;
  identity: string;
  isLeader(): boolean;
  close(): Promise<void>;
}

/** The database for the start-up line; a db.url it cannot open is reported by the connection attempts instead. */
function describeDbOrUndefined(url: string): DbDescription | undefined {
  try {
    return describeDb(url);
  } catch {
    return undefined;
  }
}

/** Where the Lease and the delete-reaper CronJob live: configured, else the pod's own namespace. */
function ownNamespace(config: Config): string {
  if (config.controller.namespace) return config.controller.namespace;
  if (existsSync(SERVICE_ACCOUNT_NAMESPACE)) return readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim();
  return 'default';
}

interface KindRuntime {
  handler: KindHandler;
  informers: Informer[];
  reconciler: Reconciler;
}

/** `conveyor controller`: turns TopicConfig, TopicSchema and ConsumerGroup resources into catalog rows, ConveyorAccess into grants. */
export async function startController(config: Config, options: ControllerOptions): Promise<RunningController> {
  const { logger } = options;
  const settings = config.controller;
  // Read before anything starts: a template it cannot use stops the controller at start-up, naming the file.
  const cronJobTemplate = settings.delete_reaper_cronjob ? loadCronJobTemplate(settings.delete_reaper_cronjob_template) : undefined;
  const identity = options.identity ?? `${hostname()}_${randomUUID().slice(0, 8)}`;
  const clients = kubeClients(options.kubeConfig);
  const namespace = ownNamespace(config);
  const watched = settings.namespaces.split(',').map((n) => n.trim()).filter(Boolean);
  const scope = instanceScope(settings.instance, settings.lease_name);
  const ownership = parseTopicOwnership(settings.topic_ownership);
  const registry = new MetricsRegistry();
  const queue = new WorkQueue({ maxDelayMs: Math.max(1000, settings.resync_period * 1000) });
  const readiness = new Map<string, { kind: string; ready: boolean }>();
  const events = new EventRecorder(clients, identity, logger);
  const kinds = new Map<string, KindRuntime>();
  let leading = false;

  const metrics = new ControllerMetrics(registry, {
    kinds: KINDS.map((k) => k.kind),
    isLeader: () => leading,
    queueDepth: () => queue.length,
    readiness: () => {
      const counts = new Map<string, { ready: number; notReady: number }>(KINDS.map((k) => [k.kind, { ready: 0, notReady: 0 }]));
      for (const { kind, ready } of readiness.values()) counts.get(kind)![ready ? 'ready' : 'notReady']++;
      return counts;
    },
  });

  const keyOf = (kind: string, obj: KubeObject) => `${kind}|${objectKey(obj.metadata.namespace, obj.metadata.name)}`;
  const enqueueAll = () => {
    for (const runtime of kinds.values()) for (const obj of cachedObjects(runtime)) queue.add(keyOf(runtime.handler.kind, obj));
  };
  const informers = () => [...kinds.values()].flatMap((k) => k.informers);
  // "Oldest wins" decided on a partial cache would hand a row to a younger resource: nothing is reconciled
  // before every informer has listed once.
  const cachesSynced = () => informers().every((i) => i.hasSynced);
  const domain = new DomainConnection(config, logger, registry, () => leading && enqueueAll());

  const onEvent = (runtime: KindRuntime) => (type: InformerEvent, obj: KubeObject) => {
    const key = keyOf(runtime.handler.kind, obj);
    if (type === 'DELETED') readiness.delete(key);
    queue.add(key);
    // Resources claiming the same row may win or lose by this change (oldest wins): look at them again.
    let target: string | undefined;
    try {
      target = runtime.handler.target(obj).key;
    } catch {
      return;
    }
    for (const other of cachedObjects(runtime)) {
      try {
        if (runtime.handler.target(other).key === target) queue.add(keyOf(runtime.handler.kind, other));
      } catch {
        // a sibling with an invalid spec claims nothing
      }
    }
  };

  for (const handler of KINDS) {
    const runtime: KindRuntime = { handler, informers: [], reconciler: undefined as unknown as Reconciler };
    runtime.reconciler = new Reconciler(handler, {
      clients,
      events,
      logger,
      domain: () => domain.current,
      objects: () => cachedObjects(runtime),
      scope,
      ownership,
      adoptExisting: settings.adopt_existing,
    });
    for (const ns of watched.length > 0 ? watched : [undefined]) {
      runtime.informers.push(
        new Informer({
          clients,
          plural: handler.plural,
          namespace: ns,
          labelSelector: scope.labelSelector,
          logger,
          watchTimeoutMs: settings.watch_timeout * 1000,
          onEvent: onEvent(runtime),
          onRestart: () => metrics.watchRestarted(handler.kind),
          // The keys the worker skipped while the caches were incomplete.
          onSynced: () => leading && cachesSynced() && enqueueAll(),
        }),
      );
    }
    kinds.set(handler.kind, runtime);
  }

  const process = async (key: string) => {
    const [kind, objKey] = key.split('|');
    const runtime = kinds.get(kind)!;
    const obj = runtime.informers.map((i) => i.cache.get(objKey)).find(Boolean);
    if (!obj) return;
    const started = performance.now();
    try {
      const outcome = await runtime.reconciler.reconcile(obj);
      metrics.reconciled(kind, outcome.result, (performance.now() - started) / 1000);
      // A reconcile that ends after a step-down must not count on a follower.
      if (outcome.ready !== undefined && leading) readiness.set(key, { kind, ready: outcome.ready });
      if (outcome.retry) queue.addRateLimited(key);
      else queue.forget(key);
    } catch (err) {
      metrics.reconciled(kind, 'error', (performance.now() - started) / 1000);
      logger.warn({ resource: `${kind} ${objKey}`, err }, 'reconcile interrupted; retrying');
      queue.addRateLimited(key);
    }
  };

  // One worker: reconciles of one topic never race each other, and a single queue is plenty for catalog rows.
  const worker = (async () => {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      try {
        if (leading && cachesSynced()) await process(key);
      } finally {
        queue.done(key);
      }
    }
  })();

  const pod = options.pod ?? { name: globalThis.process.env.POD_NAME || undefined, namespace: globalThis.process.env.POD_NAMESPACE || undefined };
  const cronJobSync = cronJobTemplate
    ? new ReaperCronJobSync({
        clients,
        namespace,
        name: settings.delete_reaper_cronjob,
        intervalMs: settings.schedule_sync_interval * 1000,
        logger,
        template: cronJobTemplate,
        owner: new OwnDeployment(clients, pod, namespace),
        schedule: () => domain.current?.deleteSchedule,
      })
    : undefined;

  const elector = new LeaderElector({
    clients,
    namespace,
    name: scope.leaseName,
    identity,
    leaseDurationMs: settings.lease_duration * 1000,
    renewDeadlineMs: settings.renew_deadline * 1000,
    retryPeriodMs: settings.retry_period * 1000,
    logger,
    onStartedLeading: () => {
      leading = true;
      enqueueAll();
      cronJobSync?.start();
    },
    onStoppedLeading: () => {
      leading = false;
      // Only the leader counts managed resources; the next leader's reconciles count them afresh.
      readiness.clear();
      void cronJobSync?.stop();
    },
  });

  const resync = setInterval(() => leading && enqueueAll(), settings.resync_period * 1000);
  resync.unref();

  const health = await startHealthServer(
    settings.host,
    settings.port,
    {
      async problem() {
        if (!cachesSynced()) return 'caches not synced with the Kubernetes API yet';
        if (!informers().every((i) => i.isHealthy)) return 'Kubernetes API unreachable';
        if (!(await domain.healthy(2000))) return 'database unavailable';
        return undefined;
      },
    },
    registry,
  );

  domain.start();
  for (const runtime of kinds.values()) for (const informer of runtime.informers) informer.start();
  elector.start();
  const database = describeDbOrUndefined(config.db.url);
  logger.info(
    {
      version: VERSION,
      db: database?.kind,
      dbLocation: database?.location,
      port: health.port,
      identity,
      namespace,
      watching: watched.length > 0 ? watched : 'all namespaces',
      instance: scope.instance || undefined,
      topicOwnership: ownership ? Object.fromEntries(ownership) : undefined,
      adoptExisting: settings.adopt_existing,
      lease: scope.leaseName,
      leaseDurationSeconds: settings.lease_duration,
    },
    'conveyor controller started',
  );

  let closing: Promise<void> | undefined;
  return {
    port: health.port,
    identity,
    isLeader: () => leading,
    close: () =>
      (closing ??= (async () => {
        queue.shutDown();
        await worker;
        await cronJobSync?.stop();
        await elector.stop();
        leading = false;
        clearInterval(resync);
        for (const runtime of kinds.values()) for (const informer of runtime.informers) informer.stop();
        await health.close();
        await domain.close();
        await registry.shutdown();
        logger.info('conveyor controller stopped');
      })()),
  };
}

function* cachedObjects(runtime: KindRuntime): Iterable<KubeObject> {
  for (const informer of runtime.informers) yield* informer.cache.values();
}
