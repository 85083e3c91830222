import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';
import { session } from '../auth/session';
import { signIn } from '../auth/sign-in';
import { rereadUser } from '../auth/status';
import type { components } from '../api/openapi';

/** A user as the API answers it (docs/auth.md): the password hash is never sent. */
export type User = components['schemas']['User'];
/** A topic grant or a consume grant (`consumer_group` set only on the latter). */
export type Grant = components['schemas']['Grant'];

/** The actions POST /api/users/:id/grants takes; consume grants have their own endpoint. */
export const TOPIC_GRANT_ACTIONS = ['read', 'write', 'admin'] as const;
export type TopicGrantAction = (typeof TOPIC_GRANT_ACTIONS)[number];

export const usersKey = ['users'] as const;
export const grantsKey = (userId: string) => ['users', userId, 'grants'] as const;

export function useUsers() {
  return useQuery({
    queryKey: usersKey,
    queryFn: async () => (await unwrap(api.GET('/api/users'))).items,
  });
}

export function useGrants(userId: string) {
  return useQuery({
    queryKey: grantsKey(userId),
    queryFn: async () => (await unwrap(api.GET('/api/users/{id}/grants', { params: { path: { id: userId } } }))).items,
  });
}

/**
 * Every user and grant change also lands in the audit log, so that list is refreshed with them. Queries
 * are invalidated rather than patched: the server is the one that knows what a change did.
 */
function useInvalidate() {
  const client = useQueryClient();
  return () => Promise.all([client.invalidateQueries({ queryKey: usersKey }), client.invalidateQueries({ queryKey: ['audit-log'] })]);
}

export function useCreateUser() {
  const invalidate = useInvalidate();
  return useMutation({
    mutationFn: (body: { username: string; password: string; is_admin: boolean }) => unwrap(api.POST('/api/users', { body })),
    onSuccess: invalidate,
  });
}

export function useUpdateUser(userId: string) {
  const invalidate = useInvalidate();
  return useMutation({
    mutationFn: (body: { is_admin: boolean }) => unwrap(api.PUT('/api/users/{id}', { params: { path: { id: userId } }, body })),
    // The signed-in user may be the one changed: the navigation follows their rights.
    onSuccess: () => Promise.all([invalidate(), rereadUser()]),
  });
}

/**
 * A new password ends every token the user was issued before it (docs/auth.md), the signed-in user's own
 * included: changing one's own password signs in again with the new one, so the session goes on. Should
 * that sign-in be refused (the login rate limit), the sign-in dialog asks for it instead.
 */
export function useChangePassword(user: User) {
  const invalidate = useInvalidate();
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (password: string) => {
      await unwrap(api.PUT('/api/users/{id}', { params: { path: { id: user.id } }, body: { password } }));
      if (session.state().user?.id === user.id) await signIn(queryClient, user.username, password).catch(() => session.expired());
    },
    onSuccess: invalidate,
  });
}

export function useDeleteUser(userId: string) {
  const invalidate = useInvalidate();
  return useMutation({
    mutationFn: () => unwrap(api.DELETE('/api/users/{id}', { params: { path: { id: userId } } })),
    onSuccess: invalidate,
  });
}

export function useAddGrant(userId: string) {
  const invalidate = useInvalidate();
  return useMutation({
    mutationFn: (body: { action: TopicGrantAction; topic_pattern: string }) => unwrap(api.POST('/api/users/{id}/grants', { params: { path: { id: userId } }, body })),
    onSuccess: invalidate,
  });
}

export function useAddConsumeGrant(userId: string) {
  const invalidate = useInvalidate();
  return useMutation({
    mutationFn: (body: { consumer_group: string; topic_pattern: string }) =>
      unwrap(api.POST('/api/users/{id}/consumer-group-grants', { params: { path: { id: userId } }, body })),
    onSuccess: invalidate,
  });
}

export function useDeleteGrant(userId: string) {
  const invalidate = useInvalidate();
  return useMutation({
    mutationFn: (grantId: string) => unwrap(api.DELETE('/api/users/{id}/grants/{grantId}', { params: { path: { id: userId, grantId } } })),
    onSuccess: invalidate,
  });
}
