"""The domain template library: fourteen API worlds of our own invention, as data.

Each entry fills the ``Domain`` vocabulary of ``domains.py``; resources and metrics are
written compactly (``plural:singular:prefix`` and ``name:camel:unit:low:high:decimals``).
"""

from __future__ import annotations

from apiflow.authoring.generate.domains import Domain, Metric, Resource


def _res(spec: str) -> tuple[Resource, ...]:
    return tuple(Resource(*item.split(":")) for item in spec.split())


def _met(*specs: str) -> tuple[Metric, ...]:
    out = []
    for spec in specs:
        name, camel, unit, low, high, dec = spec.split(":")
        out.append(Metric(name, camel, unit, float(low), float(high), int(dec)))
    return tuple(out)


DOMAINS: tuple[Domain, ...] = (
    Domain(
        "apiary",
        "Hivecrest Apiaries",
        "hive health and pollination contracts",
        "hive",
        Resource("yards", "yard", "yd"),
        "yd-ashgrove-12",
        "X-Yard-Zone",
        "yard_zone",
        "zone-b",
        "X-Retry-Pass",
        "colonies:audit",
        _res(
            "hives:hive:hv inspections:inspection:insp frames:frame:frm queens:queen:qn "
            "treatments:treatment:trt harvests:harvest:hvs contracts:contract:pct swarms:swarm:swm"
        ),
        _met(
            "brood_frames:broodFrames:frames:4:14:0",
            "mite_load_pct:miteLoadPct:%:0.4:6.5:2",
            "hive_weight_kg:hiveWeightKg:kg:18:64:1",
            "honey_kg:honeyKg:kg:3:41:1",
        ),
        "treatment_kind",
        ("oxalic", "thymol", "formic"),
        "acid",
        ("sealed", "settled", "closed"),
        ("needs_requeen", "queenless", "swarm_risk"),
        "yard crew",
    ),
    Domain(
        "brewery",
        "Kettlewright Brewing",
        "batch brewing and cellar operations",
        "kettle",
        Resource("breweries", "brewery", "brw"),
        "brw-millrace-03",
        "X-Cellar-Site",
        "cellar_site",
        "cellar-east",
        "X-Backoff-Ack",
        "cellar:release",
        _res(
            "batches:batch:bt fermenters:fermenter:fv kegs:keg:kg recipes:recipe:rcp "
            "gravity-logs:gravity-log:grv transfers:transfer:xfr taps:tap:tp releases:release:rls"
        ),
        _met(
            "original_gravity:originalGravity:SG:1.04:1.09:3",
            "abv_pct:abvPct:%:3.8:11.5:2",
            "volume_hl:volumeHl:hl:8:60:1",
            "ibu:ibu:IBU:12:95:0",
        ),
        "transfer_mode",
        ("gravity", "pumped", "co2_push"),
        "pump",
        ("released", "packaged", "closed"),
        ("dry_hop_due", "stuck_ferment", "diacetyl_rest"),
        "cellar team",
    ),
    Domain(
        "archive",
        "Quillstack Archives",
        "manuscript loans and conservation",
        "quill",
        Resource("reading-rooms", "reading-room", "rr"),
        "rr-east-wing-2",
        "X-Collection-Zone",
        "collection_zone",
        "vault-c",
        "X-Retry-Pass",
        "conservation:write",
        _res(
            "manuscripts:manuscript:ms loans:loan:ln scans:scan:scn boxes:box:bx "
            "conservation-jobs:conservation-job:cj shelves:shelf:shf accessions:accession:acc folios:folio:fol"
        ),
        _met(
            "leaf_count:leafCount:leaves:40:380:0",
            "humidity_pct:humidityPct:%:38:55:1",
            "lux_exposure:luxExposure:lux:20:180:0",
            "tear_length_mm:tearLengthMm:mm:2:48:1",
        ),
        "handling_class",
        ("cradle", "flat", "supported"),
        "normal",
        ("returned", "released", "closed"),
        ("needs_rehousing", "mould_flag", "loan_hold"),
        "reading-room desk",
    ),
    Domain(
        "rigging",
        "Limelight Rigging",
        "stage lighting cues and rigging plots",
        "lime",
        Resource("venues", "venue", "vn"),
        "vn-harbour-hall",
        "X-Stage-Deck",
        "stage_deck",
        "deck-2",
        "X-Throttle-Ack",
        "rig:operate",
        _res(
            "shows:show:shw cues:cue:cue fixtures:fixture:fx plots:plot:plt "
            "rehearsals:rehearsal:rhs trusses:truss:trs dimmers:dimmer:dmr runsheets:runsheet:rsh"
        ),
        _met(
            "fade_seconds:fadeSeconds:s:0.5:12:1",
            "load_kg:loadKg:kg:40:620:0",
            "intensity_pct:intensityPct:%:5:100:0",
            "channel_count:channelCount:ch:12:96:0",
        ),
        "cue_type",
        ("fade", "snap", "follow"),
        "cut",
        ("locked", "armed", "struck"),
        ("focus_drift", "overloaded", "lamp_out"),
        "stage crew",
    ),
    Domain(
        "vetclinic",
        "Pawmetric Clinics",
        "veterinary appointments and lab panels",
        "paw",
        Resource("clinics", "clinic", "cl"),
        "cl-brookside-7",
        "X-Clinic-Wing",
        "clinic_wing",
        "wing-north",
        "X-Retry-Pass",
        "records:sign",
        _res(
            "patients:patient:pt appointments:appointment:apt panels:panel:pnl prescriptions:prescription:rx "
            "kennels:kennel:knl invoices:invoice:inv referrals:referral:ref vaccinations:vaccination:vac"
        ),
        _met(
            "weight_kg:weightKg:kg:2:58:1",
            "temperature_c:temperatureC:C:37.5:40.2:1",
            "glucose_mmol:glucoseMmol:mmol/L:3.1:9.8:1",
            "heart_rate:heartRate:bpm:60:180:0",
        ),
        "dose_route",
        ("oral", "subcutaneous", "topical"),
        "injection",
        ("discharged", "signed", "closed"),
        ("fasting_required", "overdue_booster", "sedation_risk"),
        "front desk",
    ),
    Domain(
        "snowworks",
        "Driftline Snowworks",
        "ski-lift operations and snowmaking",
        "drift",
        Resource("resorts", "resort", "rs"),
        "rs-pinecrest-9",
        "X-Mountain-Sector",
        "mountain_sector",
        "sector-west",
        "X-Backoff-Ack",
        "lifts:operate",
        _res(
            "lifts:lift:lft runs:run:run grooming-passes:grooming-pass:grm snowguns:snowgun:sg "
            "patrols:patrol:ptl closures:closure:cls tickets:ticket:tkt avalanche-checks:avalanche-check:avc"
        ),
        _met(
            "snow_depth_cm:snowDepthCm:cm:40:260:0",
            "wind_kmh:windKmh:km/h:4:85:0",
            "water_lpm:waterLpm:L/min:120:900:0",
            "grade_pct:gradePct:%:6:48:1",
        ),
        "groom_pattern",
        ("corduroy", "moguls", "winch"),
        "flat",
        ("opened", "cleared", "closed"),
        ("wind_hold", "icy_patch", "low_cover"),
        "mountain ops",
    ),
    Domain(
        "windfarm",
        "Gustvale Energy",
        "wind-turbine inspections and curtailment",
        "gust",
        Resource("sites", "site", "st"),
        "st-carrow-ridge",
        "X-Grid-Node",
        "grid_node",
        "node-14",
        "X-Retry-Pass",
        "turbines:control",
        _res(
            "turbines:turbine:wtg blades:blade:bld inspections:inspection:ins permits:permit:pmt "
            "curtailments:curtailment:crt gearboxes:gearbox:gbx crews:crew:crw outages:outage:out"
        ),
        _met(
            "rotor_rpm:rotorRpm:rpm:6:18:1",
            "output_kw:outputKw:kW:300:3400:0",
            "vibration_mm_s:vibrationMmS:mm/s:0.8:9.5:2",
            "yaw_error_deg:yawErrorDeg:deg:0.2:14:1",
        ),
        "permit_class",
        ("hot_work", "climb", "electrical"),
        "general",
        ("energised", "cleared", "closed"),
        ("leading_edge_erosion", "pitch_fault", "icing"),
        "site crew",
    ),
    Domain(
        "bakery",
        "Crumbforge Bakeries",
        "oven scheduling and bake-lot traceability",
        "crumb",
        Resource("bakehouses", "bakehouse", "bh"),
        "bh-queens-yard",
        "X-Oven-Line",
        "oven_line",
        "line-3",
        "X-Throttle-Ack",
        "lots:release",
        _res(
            "ovens:oven:ov lots:lot:lot proofs:proof:prf recipes:recipe:rcp "
            "deliveries:delivery:dlv allergen-checks:allergen-check:alg mixers:mixer:mx trays:tray:try"
        ),
        _met(
            "core_temp_c:coreTempC:C:88:99:1",
            "hydration_pct:hydrationPct:%:58:82:1",
            "proof_minutes:proofMinutes:min:35:180:0",
            "loaf_count:loafCount:loaves:80:960:0",
        ),
        "bake_profile",
        ("steam", "convection", "deck"),
        "hot",
        ("released", "dispatched", "closed"),
        ("allergen_hold", "underproofed", "oven_drift"),
        "night shift",
    ),
    Domain(
        "aquarium",
        "Reefhold Aquaria",
        "life-support dosing and water chemistry",
        "reef",
        Resource("galleries", "gallery", "gl"),
        "gl-kelp-hall",
        "X-Loop-Id",
        "loop_id",
        "loop-7",
        "X-Retry-Pass",
        "dosing:write",
        _res(
            "tanks:tank:tk dosing-runs:dosing-run:dr water-tests:water-test:wt pumps:pump:pmp "
            "feedings:feeding:fd quarantines:quarantine:qt filters:filter:flt specimens:specimen:spc"
        ),
        _met(
            "salinity_ppt:salinityPpt:ppt:30:36:1",
            "nitrate_ppm:nitratePpm:ppm:1:40:1",
            "alkalinity_dkh:alkalinityDkh:dKH:6.5:11:2",
            "flow_lph:flowLph:L/h:800:9000:0",
        ),
        "dose_mode",
        ("continuous", "pulsed", "manual"),
        "drip",
        ("balanced", "released", "closed"),
        ("ammonia_spike", "pump_fault", "quarantine_due"),
        "life-support team",
    ),
    Domain(
        "ticketing",
        "Encorely Live",
        "venue holds, seat maps and ticket orders",
        "encore",
        Resource("promoters", "promoter", "pr"),
        "pr-northlight-5",
        "X-Box-Office",
        "box_office",
        "bo-central",
        "X-Backoff-Ack",
        "orders:refund",
        _res(
            "events:event:evt seatmaps:seatmap:smp holds:hold:hld orders:order:ord "
            "refunds:refund:rfd gates:gate:gt scans:scan:scn payouts:payout:pay"
        ),
        _met(
            "face_value:faceValue:EUR:18:240:2",
            "capacity:capacity:seats:400:18000:0",
            "sell_through_pct:sellThroughPct:%:12:99:1",
            "gate_rate:gateRate:scans/min:20:140:0",
        ),
        "hold_type",
        ("artist", "press", "accessibility"),
        "vip",
        ("confirmed", "settled", "closed"),
        ("oversold", "gate_jam", "price_drift"),
        "box office",
    ),
    Domain(
        "forestry",
        "Emberwatch Forestry",
        "burn permits, lookouts and fuel plots",
        "ember",
        Resource("districts", "district", "ds"),
        "ds-cedar-fork",
        "X-Fire-Zone",
        "fire_zone",
        "fz-upper",
        "X-Retry-Pass",
        "burns:authorize",
        _res(
            "lookouts:lookout:lk burn-permits:burn-permit:bp crews:crew:crw fuel-plots:fuel-plot:fp "
            "smoke-reports:smoke-report:smk engines:engine:eng closures:closure:cls patrols:patrol:ptl"
        ),
        _met(
            "fuel_moisture_pct:fuelMoisturePct:%:4:32:1",
            "wind_kmh:windKmh:km/h:3:60:0",
            "acres:acres:ac:2:480:1",
            "visibility_km:visibilityKm:km:1.5:40:1",
        ),
        "burn_type",
        ("pile", "broadcast", "understory"),
        "open",
        ("authorized", "contained", "closed"),
        ("red_flag", "smoke_sensitive", "crew_short"),
        "district office",
    ),
    Domain(
        "textiles",
        "Loomspire Mills",
        "loom runs, dye lots and fabric quality",
        "loom",
        Resource("mills", "mill", "ml"),
        "ml-riverside-4",
        "X-Shed-Bay",
        "shed_bay",
        "bay-d",
        "X-Throttle-Ack",
        "lots:certify",
        _res(
            "looms:loom:lm bolts:bolt:blt dye-lots:dye-lot:dl quality-checks:quality-check:qc "
            "warps:warp:wrp shipments:shipment:shp orders:order:ord swatches:swatch:sw"
        ),
        _met(
            "picks_per_cm:picksPerCm:picks/cm:14:60:0",
            "gsm:gsm:g/m2:90:420:0",
            "delta_e:deltaE:dE:0.3:3.8:2",
            "width_cm:widthCm:cm:110:320:1",
        ),
        "finish",
        ("mercerised", "brushed", "sanforised"),
        "soft",
        ("certified", "shipped", "closed"),
        ("shade_variance", "broken_ends", "skew"),
        "mill floor",
    ),
    Domain(
        "observatory",
        "Starward Observatory",
        "telescope scheduling and exposure pipelines",
        "star",
        Resource("domes", "dome", "dm"),
        "dm-summit-1",
        "X-Focal-Station",
        "focal_station",
        "cassegrain",
        "X-Retry-Pass",
        "pipeline:publish",
        _res(
            "telescopes:telescope:tel runs:run:obs exposures:exposure:exp calibrations:calibration:cal "
            "targets:target:tgt filters:filter:flt reductions:reduction:red alerts:alert:alr"
        ),
        _met(
            "seeing_arcsec:seeingArcsec:arcsec:0.5:2.8:2",
            "airmass:airmass::1.0:2.4:2",
            "exposure_s:exposureS:s:30:1800:0",
            "snr:snr::8:240:1",
        ),
        "readout",
        ("fast", "slow", "binned"),
        "quick",
        ("published", "reduced", "closed"),
        ("cloud_hold", "dome_fault", "guider_loss"),
        "night crew",
    ),
    Domain(
        "climbing",
        "Cruxline Gyms",
        "route setting and wall maintenance",
        "crux",
        Resource("gyms", "gym", "gy"),
        "gy-foundry-6",
        "X-Wall-Sector",
        "wall_sector",
        "sector-cave",
        "X-Backoff-Ack",
        "walls:reset",
        _res(
            "walls:wall:wl routes:route:rt setters:setter:sttr holds:hold:hd "
            "resets:reset:rst inspections:inspection:ins memberships:membership:mb comps:comp:cmp"
        ),
        _met(
            "grade_v:gradeV:V:0:12:0",
            "hold_count:holdCount:holds:8:44:0",
            "angle_deg:angleDeg:deg:0:55:0",
            "torque_nm:torqueNm:Nm:18:60:1",
        ),
        "route_style",
        ("slab", "overhang", "traverse"),
        "steep",
        ("opened", "reset", "closed"),
        ("loose_hold", "reset_due", "mat_gap"),
        "setting crew",
    ),
)
"""Our domain library (none of the published benchmark's domains, names or values)."""
