import type { UseMutationResult } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import { ConfirmDialog } from '../components/confirm-dialog';
import { ErrorMessage } from '../components/error-message';
import { Field } from '../components/field';
import { api, ApiError, unwrap } from '../api/client';
import { errorText } from '../components/error-message';
import { topicKeys, useTopicConfig, useTopicConfigs, type TopicConfig, type TopicConfigBody, type TopicConfigDefaults } from './api';
import { bodyOf, draftOf, emptyMeaning, INTEGER_FIELDS, unreadableFields, type ConfigDraft, type IntegerField } from './config-fields';
import { EditorActions } from './editor-actions';
import { ManagedNotice } from './managed';
import { useTopicRowEditor } from './row-editor';

/** The configuration of one topic: every setting the API takes, saved with PUT, removed with DELETE. */
export function ConfigEditor(props: { topic: string }) {
  const { topic } = props;
  const headingId = useId();
  const config = useTopicConfig(topic);
  // The list answers what an empty field means on this service (its queue.* settings).
  const defaults = useTopicConfigs().data?.defaults;
  const { save, remove, confirming, confirm, closeConfirm } = useTopicRowEditor({
    rowKey: topicKeys.config(topic),
    listKey: topicKeys.configs,
    put: (body: TopicConfigBody): Promise<TopicConfig> => unwrap(api.PUT('/api/topic-configs/{topic}', { params: { path: { topic } }, body })),
    remove: () => unwrap(api.DELETE('/api/topic-configs/{topic}', { params: { path: { topic } } })),
  });

  const stored = config.data ?? null;
  return (
    <section className="topic-panel" aria-labelledby={headingId}>
      <h3 id={headingId}>Configuration</h3>
      {config.isPending ? (
        <p>Loading…</p>
      ) : (
        <>
          <ErrorMessage error={config.error} />
          {config.data === null && <p className="hint">Not configured yet: the server defaults apply. Save to create a configuration.</p>}
          {/* Keyed by the stored row, so a save or a delete refills the form. */}
          <ConfigForm key={JSON.stringify(stored)} topic={topic} config={stored} defaults={defaults} save={save} onDelete={confirm} />
        </>
      )}
      {confirming && (
        <ConfirmDialog
          title="Delete the configuration"
          message={`Delete the configuration of ${topic}? Every setting reverts to the server default.`}
          actionLabel="Delete"
          pending={remove.isPending}
          error={remove.error}
          onConfirm={() => remove.mutate()}
          onClose={closeConfirm}
        />
      )}
    </section>
  );
}

const NOT_A_NUMBER = 'Not a number: enter a whole number such as 5, or leave the field empty.';

/** The setting a refusal is about: the service's 400s name it first ("max_depth must be at least 1 ..."). */
function fieldOfError(error: unknown): IntegerField | null {
  if (!(error instanceof ApiError) || error.status !== 400) return null;
  return INTEGER_FIELDS.find((f) => error.message.startsWith(`${f.name} `))?.name ?? null;
}

function ConfigForm(props: { topic: string; config: TopicConfig | null; defaults: TopicConfigDefaults | undefined; save: UseMutationResult<TopicConfig, Error, TopicConfigBody>; onDelete: () => void }) {
  const { config, save } = props;
  const [draft, setDraft] = useState<ConfigDraft>(() => draftOf(config));
  // Fields whose text the browser could not read as a number at the last save (see unreadableFields).
  const [unreadable, setUnreadable] = useState<ReadonlySet<IntegerField>>(new Set());
  const replayableHint = useId();
  const managed = config?.managed_by ?? null;

  const change = (next: Partial<ConfigDraft>) => {
    if (!save.isPending) save.reset();
    setDraft((d) => ({ ...d, ...next }));
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const bad = unreadableFields(event.currentTarget as HTMLFormElement);
    setUnreadable(bad);
    if (bad.size > 0) {
      save.reset(); // an earlier "Saved." must not stand for this attempt
      return;
    }
    save.mutate(bodyOf(draft));
  };
  const clearUnreadable = (name: IntegerField) =>
    setUnreadable((current) => {
      if (!current.has(name)) return current;
      const next = new Set(current);
      next.delete(name);
      return next;
    });
  // A refusal of one setting is shown at that setting; anything else under the buttons.
  const refusedField = fieldOfError(save.error);
  const numberField = (name: IntegerField) => {
    const f = INTEGER_FIELDS.find((x) => x.name === name)!;
    const empty = emptyMeaning(name, props.defaults);
    const error = unreadable.has(name) ? NOT_A_NUMBER : refusedField === name ? errorText(save.error) : null;
    return (
      <Field key={name} label={f.label} hint={empty ? `${f.hint} ${empty}` : f.hint} error={error}>
        <input
          type="number"
          inputMode="numeric"
          step={1}
          name={name}
          value={draft[name]}
          onChange={(e) => change({ [name]: e.target.value })}
          // onInput, not onChange: going from "5e" to "5e+" leaves the value "" both times, and React fires no onChange.
          onInput={() => clearUnreadable(name)}
        />
      </Field>
    );
  };

  return (
    // noValidate: the service judges the values, and its message is the one shown.
    <form onSubmit={submit} noValidate>
      {managed && <ManagedNotice managedBy={managed} />}
      <fieldset className="plain-fieldset" disabled={managed !== null}>
        {numberField('max_retries')}
        {numberField('message_ttl_seconds')}
        {numberField('max_depth')}
        {numberField('throughput_limit')}
        {numberField('delivery_delay_seconds')}
        {numberField('retry_backoff_seconds')}
        {numberField('retry_backoff_max_seconds')}
        {numberField('visibility_timeout_seconds')}
        {numberField('receive_wait_seconds')}
        <div className="field">
          <label className="checkbox-label">
            <input type="checkbox" checked={draft.replayable} onChange={(e) => change({ replayable: e.target.checked })} aria-describedby={replayableHint} />
            Replayable
          </label>
          <small className="hint" id={replayableHint}>
            replayable: acked messages are kept in the archive log, from which they can be replayed.
          </small>
        </div>
        {numberField('replay_window_seconds')}
      </fieldset>
      <EditorActions managed={managed !== null} exists={config !== null} saving={save.isPending} saved={save.isSuccess ? 'Saved.' : null} error={refusedField === null ? save.error : null} onDelete={props.onDelete} />
    </form>
  );
}
