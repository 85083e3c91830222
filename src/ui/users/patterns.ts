/** How a grant's topic pattern matches (docs/auth.md, "Topic patterns"), for the forms' hints. */
export const PATTERN_HINT =
  '* = every topic; orders.* = orders and its dotted sub-topics (orders.eu, orders.dlq); orders* = every topic starting with orders; orders = exactly orders (not orders.dlq). Empty means *.';
