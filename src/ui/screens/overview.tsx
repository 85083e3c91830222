import { ErrorMessage } from '../components/error-message';
import { formatNumber, localZoneName } from '../format';
import { NARROW, useMediaQuery } from '../components/use-media-query';
import { DepthChart } from '../overview/depth-chart';
import { useDepthHistory } from '../overview/depth-history';
import { seriesStyles } from '../overview/series-style';
import { Swatch } from '../overview/swatch';
import { TopicCards, TopicTable } from '../overview/topic-table';
import { REFRESH_MS, useOverview } from '../overview/use-overview';
import { href } from '../router';

/** Every topic at a glance, refreshed every few seconds, with a live chart of the backlog per topic. */
export function OverviewScreen() {
  const overview = useOverview();
  const history = useDepthHistory(overview.statsAt, overview.depths);
  const latest = (i: number) => history.series[i]?.[history.series[i].length - 1] ?? null;
  const styles = seriesStyles(history.topics);
  // A phone gets a card per topic: ten columns do not fit 375 px, and a table scrolling in its box hides them.
  const narrow = useMediaQuery(NARROW);

  return (
    <section className="overview-screen" aria-labelledby="overview-title">
      <h1 id="overview-title">Overview</h1>
      <ErrorMessage error={overview.statsError} />
      {overview.rows === undefined && !overview.statsError && <p className="muted">Loading…</p>}
      {overview.rows !== undefined && overview.rows.length === 0 && (
        <div className="empty-state">
          <p>No topics yet. A topic appears here when a message is enqueued to it or it gets a configuration.</p>
          <p>
            <a href={href('enqueue')}>Enqueue a message</a> or <a href={href('topics')}>configure a topic</a>.
          </p>
        </div>
      )}
      {overview.rows !== undefined && overview.rows.length > 0 && (
        <>
          {narrow ? (
            <TopicCards rows={overview.rows} styles={styles} hasOrdering={overview.hasOrdering} />
          ) : (
            <TopicTable rows={overview.rows} styles={styles} hasOrdering={overview.hasOrdering} />
          )}
          {overview.metricsError !== null && <p className="muted">Rates are unavailable: the service's /metrics could not be read.</p>}
          <figure className="depth-figure">
            <figcaption>
              <h2>Backlog over time</h2>
              <span className="muted">
                Pending plus processing messages per topic, every {REFRESH_MS / 1000} s while this page is open; times in your time zone ({localZoneName()}).
              </span>
            </figcaption>
            <DepthChart history={history} label={`Line chart of the backlog per topic over the last ${history.times.length} samples; the latest values are listed below it.`} />
            <ul className="chart-legend" aria-label="Latest backlog">
              {history.topics.map((topic, i) => (
                <li key={topic} data-topic={topic}>
                  <Swatch style={styles.get(topic)} />
                  {topic}: <span className="chart-value">{formatNumber(latest(i))}</span>
                </li>
              ))}
            </ul>
          </figure>
        </>
      )}
    </section>
  );
}
