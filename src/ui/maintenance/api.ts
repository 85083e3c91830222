import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';
import type { components } from '../api/openapi';

export type ReaperName = 'expiry' | 'delete' | 'archive';

type Schemas = components['schemas'];

/** What a run answered: `{expired}`, `{deleted}` or `{deleted, audit_deleted}`. */
export type ReaperReport = Partial<Schemas['ExpiryReaperRun'] & Schemas['Deleted'] & Schemas['ArchiveReaperRun']>;
export type AuditEntry = Schemas['AuditEntry'];

const RUN_PATHS = {
  expiry: '/api/admin/expiry-reaper/run',
  delete: '/api/admin/delete-reaper/run',
  archive: '/api/admin/archive-reaper/run',
} as const;

export const scheduleKey = ['delete-reaper-schedule'] as const;

/** Runs change messages and stats on every other screen, and each run is itself an audit record. */
export function useRunReaper(name: ReaperName) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: async () => ({ report: (await unwrap(api.POST(RUN_PATHS[name]))) as ReaperReport, ranAt: new Date().toISOString() }),
    onSuccess: () => client.invalidateQueries(),
  });
}

export function useSchedule() {
  return useQuery({ queryKey: scheduleKey, queryFn: () => unwrap(api.GET('/api/admin/delete-reaper/schedule')) });
}

export function useSaveSchedule() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (schedule: string) => unwrap(api.PUT('/api/admin/delete-reaper/schedule', { body: { schedule } })),
    onSuccess: (saved) => {
      client.setQueryData(scheduleKey, saved);
      return client.invalidateQueries({ queryKey: ['audit-log'] });
    },
  });
}

export interface AuditFilter {
  topic: string;
  actor: string;
}

export function useAuditLog(filter: AuditFilter, limit: number, offset: number) {
  return useQuery({
    queryKey: ['audit-log', filter, limit, offset],
    queryFn: async () => {
      const query = { limit, offset, topic: filter.topic || undefined, actor: filter.actor || undefined };
      return unwrap(api.GET('/api/audit-log', { params: { query } }));
    },
    // Paging keeps the previous page on screen until the next one arrives, instead of flashing empty.
    placeholderData: (previous) => previous,
  });
}
