import { AuditLogSection } from '../maintenance/audit-log';
import { ReapersSection } from '../maintenance/reapers';
import { ScheduleSection } from '../maintenance/schedule';

/** Admin only: the shell shows this screen to admins alone (with auth off, everyone is one). */
export function MaintenanceScreen() {
  return (
    <div className="maintenance-screen">
      <h1>Maintenance</h1>
      <ReapersSection />
      <ScheduleSection />
      <AuditLogSection />
    </div>
  );
}
