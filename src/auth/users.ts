import type { Knex } from 'knex';
import { v4 as uuidv4 } from 'uuid';
import { isUniqueViolation } from '../store/dialect.js';
import { deleteGrant, insertGrant, listGrants, type GrantRow } from '../store/grants.js';
import { deleteUser, findUserByName, getUser, insertUser, listUsers, updateUser, type UserChanges, type UserRow } from '../store/users.js';
import { conflict, DomainError, invalid, notFound } from '../queue/errors.js';
import { assertNotManaged, describeManager } from '../queue/managed-by.js';
import { assertConsumerGroupName } from '../queue/consumer-group-names.js';
import { isValidPattern } from './grants-policy.js';
import { hashPassword, MIN_PASSWORD_LENGTH } from './passwords.js';
import { isReservedUsername, parseServiceAccountUsername, SERVICE_ACCOUNT_PREFIX } from './service-account-names.js';

/** A user as the API shows it: neither the hash nor the password's version is ever returned (docs/auth.md, Users). */
export type User = Omit<UserRow, 'password_hash' | 'password_version'>;
export type Grant = GrantRow;

export interface NewUserInput {
  username?: unknown;
  password?: unknown;
  is_admin?: unknown;
}

export interface UserUpdateInput {
  username?: unknown;
  password?: unknown;
  is_admin?: unknown;
}

const MAX_USERNAME_LENGTH = 255;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TOPIC_GRANT_ACTIONS = ['read', 'write', 'admin'];

const userNotFound = () => notFound('user not found');
const withoutHash = ({ password_hash: _hash, password_version: _version, ...user }: UserRow): User => user;

function assertUsername(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') throw invalid('username is required and must be a non-empty string');
  if (value.length > MAX_USERNAME_LENGTH) throw invalid(`username must be at most ${MAX_USERNAME_LENGTH} characters`);
  // `alice ` beside `alice` would be a second user on SQLite and the same one on MySQL (trailing spaces ignored).
  if (value !== value.trim()) throw invalid('username must not begin or end with whitespace');
  if (isReservedUsername(value)) throw invalid(`usernames beginning with "${SERVICE_ACCOUNT_PREFIX}" are reserved for Kubernetes service accounts, which appear on their first request`);
  return value;
}

function assertPassword(value: unknown): string {
  if (typeof value !== 'string' || value === '') throw invalid('password is required and must be a string');
  if (value.length < MIN_PASSWORD_LENGTH) throw invalid(`password must be at least ${MIN_PASSWORD_LENGTH} characters`);
  return value;
}

function assertPattern(value: unknown): string {
  if (value === undefined || value === null || value === '') return '*';
  if (typeof value !== 'string' || !isValidPattern(value)) {
    throw invalid('topic_pattern must be "*", a topic name, "<prefix>.*" or "<prefix>*"');
  }
  return value;
}

export interface TopicGrantInput {
  action?: unknown;
  topic_pattern?: unknown;
}

export interface ConsumeGrantInput {
  consumer_group?: unknown;
  topic_pattern?: unknown;
}

/** A grant as validated, before it belongs to anyone. */
export interface GrantSpec {
  action: 'read' | 'write' | 'admin' | 'consume';
  topic_pattern: string;
  consumer_group: string;
}

/** POST /api/users/:id/grants' rules, shared with the ConveyorAccess resource so both say the same thing. */
export function topicGrant(input: TopicGrantInput): GrantSpec {
  if (typeof input.action !== 'string' || !TOPIC_GRANT_ACTIONS.includes(input.action)) {
    throw invalid('action is required and must be one of read, write, admin (consume grants: POST /api/users/:id/consumer-group-grants)');
  }
  return { action: input.action as GrantSpec['action'], topic_pattern: assertPattern(input.topic_pattern), consumer_group: '' };
}

/** POST /api/users/:id/consumer-group-grants' rules. */
export function consumeGrant(input: ConsumeGrantInput): GrantSpec {
  const group = input.consumer_group;
  if (typeof group !== 'string' || group === '') throw invalid('consumer_group is required and must be a non-empty string');
  // A grant names a group that registration could create (the HTTP body is checked the same way before).
  assertConsumerGroupName(group);
  return { action: 'consume', topic_pattern: assertPattern(input.topic_pattern), consumer_group: group };
}

/** A service account's principal is named by its token and has no password; what it may do comes from grants only. */
function assertServiceAccountChange(changes: UserChanges, password: string | undefined): void {
  if (changes.username !== undefined) throw invalid("a service account's username is its identity and cannot change");
  if (password !== undefined) throw invalid('a service account has no password: it authenticates with its ServiceAccount token');
  if (changes.is_admin === true) throw invalid('a service account is never an admin: grant it what it needs');
}

/** Users and grants (docs/auth.md, Users and Grants). Every change calls `changed` so caches drop stale principals. */
export class UserService {
  constructor(
    private readonly db: Knex,
    private readonly now: () => number,
    private readonly changed: () => void,
  ) {}

  async list(): Promise<User[]> {
    return (await listUsers(this.db)).map(withoutHash);
  }

  /** The stored user with its hash, for login and for re-checking a token; null for anything unknown. */
  async find(id: string): Promise<UserRow | null> {
    return UUID.test(id) ? getUser(this.db, id.toLowerCase()) : null;
  }

  findByName(username: string): Promise<UserRow | null> {
    return findUserByName(this.db, username);
  }

  async create(input: NewUserInput): Promise<User> {
    const username = assertUsername(input.username);
    const password = assertPassword(input.password);
    if (input.is_admin !== undefined && input.is_admin !== null && typeof input.is_admin !== 'boolean') throw invalid('is_admin must be a boolean');
    return this.insert(username, await hashPassword(password), input.is_admin === true);
  }

  /** Start-up: the configured admin, unless a user of that name exists (another pod may create it at the same time). */
  async bootstrapAdmin(username: string, password: string): Promise<User | null> {
    if (await findUserByName(this.db, username)) return null;
    try {
      return await this.insert(username, await hashPassword(password), true);
    } catch (err) {
      if (err instanceof DomainError && err.code === 'conflict') return null;
      throw err;
    }
  }

  async update(id: string, input: UserUpdateInput): Promise<User> {
    const changes: UserChanges = {};
    if (input.username !== undefined) changes.username = assertUsername(input.username);
    const password = input.password === undefined ? undefined : assertPassword(input.password);
    if (input.is_admin !== undefined) {
      if (typeof input.is_admin !== 'boolean') throw invalid('is_admin must be a boolean');
      changes.is_admin = input.is_admin;
    }
    const user = await this.find(id);
    if (!user) throw userNotFound();
    if (user.service_account) assertServiceAccountChange(changes, password);
    if (password !== undefined) changes.password_hash = await hashPassword(password);
    let outcome: Awaited<ReturnType<typeof updateUser>>;
    try {
      outcome = await updateUser(this.db, id.toLowerCase(), changes, this.now());
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`username "${changes.username}" is already taken`);
      throw err;
    }
    if (outcome === 'not_found') throw userNotFound();
    if (outcome === 'last_admin') throw invalid('cannot remove admin rights from the last admin user');
    this.changed();
    return withoutHash((await this.find(id))!);
  }

  /** `actingUserId` is the caller (null with auth off): deleting yourself is 400 (docs/auth.md, Users). */
  async delete(id: string, actingUserId: string | null): Promise<void> {
    const user = await this.find(id);
    if (user && user.id === actingUserId) throw invalid('cannot delete the currently authenticated user');
    if (!user) throw userNotFound();
    // The resource would put its grants back on a user of the same name: delete the resource instead.
    const outcome = await deleteUser(this.db, user.id, (manager) => {
      if (manager) throw conflict(`user "${user.username}" holds grants managed by ${describeManager(manager)}; delete that Kubernetes resource first`);
    });
    if (outcome === 'not_found') throw userNotFound();
    if (outcome === 'last_admin') throw invalid('cannot delete the last admin user');
    this.changed();
  }

  async grants(userId: string): Promise<Grant[]> {
    const user = await this.find(userId);
    if (!user) throw userNotFound();
    return this.grantsOf(user);
  }

  /** The grants of a user just read, without reading the user again for a 404 as `grants` does. */
  grantsOf(user: UserRow): Promise<Grant[]> {
    return listGrants(this.db, user.id);
  }

  /** Topic grants: read, write or admin; consume grants come from addConsumeGrant. */
  /**
   * The id of the principal of a service account's token (`system:serviceaccount:<ns>:<name>`), made on its first
   * use; several instances may make it at the same time. Null when a password user holds the name (made before
   * such names were reserved): a token never acts as a person's account.
   */
  async ensureServiceAccount(username: string): Promise<string | null> {
    if (!parseServiceAccountUsername(username)) return null;
    const existing = await findUserByName(this.db, username);
    if (existing) return existing.service_account ? existing.id : null;
    try {
      return (await this.insert(username, '', false, true)).id;
    } catch (err) {
      if (!(err instanceof DomainError && err.code === 'conflict')) throw err;
      const made = await findUserByName(this.db, username);
      return made?.service_account ? made.id : null;
    }
  }

  async addGrant(userId: string, input: TopicGrantInput): Promise<Grant> {
    const grant = topicGrant(input);
    return this.insertGrant(userId, grant.action, grant.topic_pattern, '');
  }

  async addConsumeGrant(userId: string, input: ConsumeGrantInput): Promise<Grant> {
    const grant = consumeGrant(input);
    return this.insertGrant(userId, 'consume', grant.topic_pattern, grant.consumer_group);
  }

  async deleteGrant(userId: string, grantId: string): Promise<void> {
    const user = await this.find(userId);
    if (!user) throw userNotFound();
    const guard = (manager: string | undefined) => assertNotManaged(manager, 'this grant');
    if (!UUID.test(grantId) || !(await deleteGrant(this.db, user.id, grantId.toLowerCase(), guard))) throw notFound('grant not found');
    this.changed();
  }

  private async insert(username: string, passwordHash: string, isAdmin: boolean, serviceAccount = false): Promise<User> {
    const now = this.now();
    const row: UserRow = { id: uuidv4(), username, password_hash: passwordHash, is_admin: isAdmin, created_at: now, updated_at: now, password_version: 0, service_account: serviceAccount };
    try {
      await insertUser(this.db, row);
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`username "${username}" is already taken`);
      throw err;
    }
    this.changed();
    return withoutHash(row);
  }

  private async insertGrant(userId: string, action: string, topicPattern: string, consumerGroup: string): Promise<Grant> {
    const user = await this.find(userId);
    if (!user) throw userNotFound();
    const row: GrantRow = { id: uuidv4(), user_id: user.id, action, topic_pattern: topicPattern, consumer_group: consumerGroup, created_at: this.now(), managed_by: '' };
    try {
      await insertGrant(this.db, row);
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict('the user already has this grant');
      throw err;
    }
    this.changed();
    return row;
  }
}
