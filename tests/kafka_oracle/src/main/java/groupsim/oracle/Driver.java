package groupsim.oracle;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * One area of Kafka driven by the oracle (Connect, Streams, the group coordinator, ...).
 *
 * <p>A request is {@code {"id": n, "op": "<area>.<verb>", ...}}; {@link Main} routes it by the
 * area before the first dot and hands the whole request to the area's driver. A driver may keep
 * state between requests (an assignor per leader, a coordinator per session) keyed by fields of
 * the request; {@code <area>.reset} must drop all of it.
 */
public interface Driver {
    /**
     * Handles one request.
     *
     * @param verb the op after the area's dot, e.g. {@code "assign"} for {@code "connect.assign"}
     * @param request the whole request object
     * @return the result, any JSON value
     * @throws Exception anything Kafka's classes throw; Main answers it as an error
     */
    JsonNode handle(String verb, JsonNode request) throws Exception;
}
