import { useEffect, useId, useRef, type ReactNode } from 'react';

/**
 * A modal dialog on the native <dialog> element: showModal() makes the rest of the page inert, keeps focus
 * inside, and Escape closes it; focus returns to whatever opened it. `variant="drawer"` slides in from the right.
 */
export function Dialog(props: { title: string; onClose: () => void; children: ReactNode; footer?: ReactNode; variant?: 'modal' | 'drawer'; wide?: boolean }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const { onClose } = props;
  useEffect(() => {
    const dialog = ref.current!;
    const opener = document.activeElement as HTMLElement | null;
    dialog.showModal();
    const cancel = (event: Event) => {
      event.preventDefault();
      onClose();
    };
    dialog.addEventListener('cancel', cancel);
    return () => {
      dialog.removeEventListener('cancel', cancel);
      dialog.close();
      opener?.focus?.();
    };
  }, [onClose]);
  return (
    <dialog ref={ref} aria-labelledby={titleId} className={`dialog ${props.variant === 'drawer' ? 'drawer' : ''} ${props.wide ? 'wide' : ''}`}>
      <header className="dialog-header">
        <h2 id={titleId}>{props.title}</h2>
        <button type="button" className="icon-button" aria-label="Close" onClick={onClose}>
          ×
        </button>
      </header>
      <div className="dialog-body">{props.children}</div>
      {props.footer && <footer className="dialog-footer">{props.footer}</footer>}
    </dialog>
  );
}
