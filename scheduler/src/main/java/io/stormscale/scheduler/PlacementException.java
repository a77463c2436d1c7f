package io.stormscale.scheduler;

/** A placement that cannot be read or does not fit its topology; the message is one line (control characters as '?'). */
public final class PlacementException extends Exception {
    private static final long serialVersionUID = 1L;

    PlacementException(String message) {
        super(message.replaceAll("\\p{Cntrl}", "?"));
    }
}
