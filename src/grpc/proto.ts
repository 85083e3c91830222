import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';

/**
 * keepCase keeps the proto's snake_case field names; `oneofs` marks which proto3 `optional` fields were sent
 * (their synthetic oneof names the field), so an absent visibility timeout is told apart from 0.
 */
export const LOADER_OPTIONS: protoLoader.Options = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true };

/** proto/ sits at the package root: two levels above src/grpc, three above dist/src/grpc. */
export function queueProtoPath(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, 'proto', 'queue.proto');
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new Error('proto/queue.proto not found next to the installed package');
}

/**
 * The service as @grpc/proto-loader describes it, and the same file as protobufjs types (`root`), which the
 * server decodes requests with (request-decoder.ts). proto-loader loads it the same way: keepCase and
 * protobufjs's bundled google/protobuf types.
 */
export function loadQueuePackage(): { definition: protoLoader.PackageDefinition; service: grpc.ServiceDefinition; root: protobuf.Root } {
  const definition = protoLoader.loadSync(queueProtoPath(), LOADER_OPTIONS);
  const loaded = grpc.loadPackageDefinition(definition) as unknown as { queue: { QueueService: grpc.ServiceClientConstructor } };
  const root = new protobuf.Root().loadSync(queueProtoPath(), { keepCase: true });
  root.resolveAll();
  return { definition, service: loaded.queue.QueueService.service, root };
}

/** Method name -> full name of its request message, e.g. Ack -> queue.AckRequest. */
export function requestTypeNames(definition: protoLoader.PackageDefinition): Record<string, string> {
  const service = definition['queue.QueueService'] as protoLoader.ServiceDefinition;
  return Object.fromEntries(Object.entries(service).map(([name, method]) => [name, `queue.${(method.requestType.type as { name: string }).name}`]));
}
