import type { ReactNode } from 'react';
import { ErrorMessage } from '../components/error-message';

/** Save, Delete (when the row exists), the saved notice and the save's error, under either topic editor. */
export function EditorActions(props: { managed: boolean; exists: boolean; saving: boolean; saved: ReactNode | null; error: unknown; onDelete: () => void }) {
  return (
    <>
      {!props.managed && (
        <div className="editor-actions">
          <button type="submit" className="primary" disabled={props.saving}>
            Save
          </button>
          {props.exists && (
            <button type="button" className="danger" onClick={props.onDelete}>
              Delete
            </button>
          )}
          {props.saved !== null && (
            <span role="status" className="ok-text">
              {props.saved}
            </span>
          )}
        </div>
      )}
      <ErrorMessage error={props.error} />
    </>
  );
}
